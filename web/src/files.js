// A project's files as the browser pages use them (the project page's file
// view and the notebook's file browser): where a file opens, downloads, the
// live tree listing (GET .../files?dirs=1 with If-None-Match, so a poll
// while nothing changed costs a 304), folders, moves, and uploads with
// progress (XMLHttpRequest, the one browser API that reports upload progress).
import { request, filePath, ApiError } from './api.js';
import { app } from './app.js';
import { download } from './ui.js';

const enc = encodeURIComponent;
export const projUrl = (id) => `/api/v1/projects/${enc(id)}`;
export const encPath = (p) => p.split('/').map(enc).join('/');
export const dirUrl = (id, path) => `${projUrl(id)}/dirs/${encPath(path)}`;
export const baseName = (p) => p.slice(p.lastIndexOf('/') + 1);
export const parentOf = (p) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');

// The app's page for a file: notebooks in the notebook page, anything else in
// the file editor.
export function openUrl(projectId, path) {
  return /\.ipynb$/i.test(path)
    ? `/projects/${enc(projectId)}/notebook/${encPath(path)}`
    : `/projects/${enc(projectId)}/edit/${encPath(path)}`;
}

// Download a working-tree file (fetched with the session cookie, never a
// token in a URL).
export async function downloadFile(projectId, path) {
  const res = await request('GET', filePath(projectId, path), { raw: true });
  download(await res.blob(), baseName(path));
}

// A lister for the project's tree: each call answers the items ([{path,
// type: 'file'|'directory', size, modified_at}]), or null when nothing
// changed since the last call (304 to If-None-Match).
export function treeLister(projectId, { dirs = true } = {}) {
  let tag = null;
  return async function list() {
    let res;
    try {
      res = await request('GET', `${projUrl(projectId)}/files`, {
        raw: true, query: dirs ? { dirs: 1 } : undefined, headers: tag ? { 'If-None-Match': tag } : {},
      });
    } catch (e) {
      if (e instanceof ApiError && e.status === 304) return null;
      throw e;
    }
    const j = await res.json();
    tag = res.headers.get('ETag');
    return Array.isArray(j) ? j : j.items || [];
  };
}

// PUT `blob` to `path`. Without `replace` the write is create-only
// (If-None-Match: *): an existing file answers 412 and is left alone, so the
// caller can ask before replacing it. `onProgress(loaded, total)` follows the
// upload. Resolves with the file's entry {path, size, etag, ...}; rejects
// with ApiError carrying the server's message (402 workspace full, 413 too
// large, 422 not a notebook, 412 exists). `signal` (AbortSignal) cancels.
export function uploadFile(projectId, path, blob, { replace = false, onProgress, signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', filePath(projectId, path));
    const csrf = app.me && app.me.csrf_token;
    if (csrf) xhr.setRequestHeader('X-CSRF-Token', csrf);
    if (!replace) xhr.setRequestHeader('If-None-Match', '*');
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    if (onProgress) xhr.upload.addEventListener('progress', (ev) => onProgress(ev.loaded, ev.lengthComputable ? ev.total : blob.size));
    xhr.addEventListener('load', () => {
      let j = null;
      try { j = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) { resolve(j); return; }
      const err = j && j.error ? j.error : {};
      reject(new ApiError(xhr.status, err.code || 'error', err.message || `${xhr.status} ${xhr.statusText}`));
    });
    xhr.addEventListener('error', () => reject(new Error(`Upload of ${path} failed: the connection broke`)));
    xhr.addEventListener('abort', () => reject(new DOMException('Upload cancelled', 'AbortError')));
    if (signal) signal.addEventListener('abort', () => xhr.abort());
    xhr.send(blob);
  });
}
