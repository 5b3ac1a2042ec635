// Resumable uploads of dataset files (API.md "Datasets"): the file's sha256 is
// computed in the browser first (crypto.subtle for small files, the
// incremental hash in a worker for large ones), declared with
// POST /api/v1/datasets/{id}/uploads {path, size, sha256}, then sent in
// 8 MiB chunks, each `PUT /api/v1/uploads/{upload_id}` with
// `Content-Range: bytes a-b/size`. A chunk that fails (the connection drops,
// a 5xx, a 409 because the server's offset moved) is retried with backoff
// after asking the server for its durable offset (`GET /api/v1/uploads/{id}`),
// so only the bytes the server lacks go again. The upload id and the hash are
// kept in localStorage under dataset + path + size + mtime: choosing the same
// file after a reload resumes where the server stopped, without hashing again.
import { api, ApiError } from './api.js';
import { app } from './app.js';

export const CHUNK = 8 << 20;
const SUBTLE_MAX = 16 << 20;      // crypto.subtle.digest wants the whole file in memory
const RETRIES = 8;                 // failed chunks in a row before giving up
const enc = encodeURIComponent;
const KEY = 'eddy.dsupload.';

const storeKey = (dsId, path, file) => `${KEY}${dsId}:${file.size}:${file.lastModified}:${path}`;
function loadSaved(key) {
  try { return JSON.parse(localStorage.getItem(key) || 'null'); } catch { return null; }
}
function save(key, v) { try { localStorage.setItem(key, JSON.stringify(v)); } catch { /* full: no resume after a reload */ } }
function forget(key) { try { localStorage.removeItem(key); } catch { /* ignore */ } }

// Whether an upload of this file to this path was started and can resume.
export function hasSavedUpload(dsId, path, file) { return !!loadSaved(storeKey(dsId, path, file)); }

// Uploads into dataset `dsId` that this browser started and did not finish
// (a reload, a closed tab, a failure): [{key, path, size, mtime, upload_id, offset}],
// offset from the server; ones the server no longer has are forgotten.
export async function savedUploads(dsId) {
  const prefix = `${KEY}${dsId}:`;
  let keys = [];
  try { keys = Object.keys(localStorage).filter((k) => k.startsWith(prefix)); } catch { /* no storage */ }
  const out = [];
  for (const key of keys) {
    const m = /^(\d+):(\d+):(.*)$/.exec(key.slice(prefix.length));
    const saved = loadSaved(key);
    if (!m || !saved) { forget(key); continue; }
    try {
      const r = await api.get(`/api/v1/uploads/${enc(saved.upload_id)}`);
      out.push({ key, path: m[3], size: Number(m[1]), mtime: Number(m[2]), upload_id: saved.upload_id, offset: Number(r.offset) || 0 });
    } catch (e) { if (e instanceof ApiError && e.status === 404) forget(key); }
  }
  return out;
}

// Drop a saved upload (the server's bytes too).
export async function discardSaved(key, uploadId) {
  forget(key);
  try { await api.del(`/api/v1/uploads/${enc(uploadId)}`); } catch { /* gone already */ }
}

// sha256 of a File as hex; onProgress(bytesHashed).
export async function sha256File(file, onProgress, signal) {
  if (file.size <= SUBTLE_MAX && crypto.subtle) {
    const d = await crypto.subtle.digest('SHA-256', await file.arrayBuffer());
    onProgress && onProgress(file.size);
    return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, '0')).join('');
  }
  const w = new Worker(new URL('./sha256_worker.js', import.meta.url), { type: 'module' });
  try {
    return await new Promise((resolve, reject) => {
      if (signal) signal.addEventListener('abort', () => reject(new DOMException('Upload cancelled', 'AbortError')));
      w.onmessage = (ev) => {
        const m = ev.data;
        if (m.progress !== undefined) onProgress && onProgress(m.progress);
        else if (m.sha256) resolve(m.sha256);
        else reject(new Error(`Could not hash ${file.name}: ${m.error}`));
      };
      w.onerror = (ev) => reject(new Error(`Could not hash ${file.name}: ${ev.message || 'worker failed'}`));
      w.postMessage({ file });
    });
  } finally { w.terminate(); }
}

// One chunk: PUT `blob` as bytes start..start+size-1 of `total`. Resolves with
// the server's JSON ({offset, done, file?}); rejects with ApiError (status 0
// for a dropped connection). onProgress(bytes of this chunk sent).
function putChunk(uploadId, start, blob, total, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', `/api/v1/uploads/${enc(uploadId)}`);
    const csrf = app.me && app.me.csrf_token;
    if (csrf) xhr.setRequestHeader('X-CSRF-Token', csrf);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.setRequestHeader('Content-Range', `bytes ${start}-${start + blob.size - 1}/${total}`);
    xhr.upload.addEventListener('progress', (ev) => onProgress(ev.loaded));
    xhr.addEventListener('load', () => {
      let j = null;
      try { j = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) { resolve(j || {}); return; }
      const err = (j && j.error) || {};
      reject(new ApiError(xhr.status, err.code || 'error', err.message || `${xhr.status} ${xhr.statusText}`));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'network', 'the connection broke')));
    xhr.addEventListener('abort', () => reject(new DOMException('Upload cancelled', 'AbortError')));
    if (signal) {
      if (signal.aborted) { reject(new DOMException('Upload cancelled', 'AbortError')); return; }
      signal.addEventListener('abort', () => xhr.abort());
    }
    xhr.send(blob);
  });
}

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(new DOMException('Upload cancelled', 'AbortError')); });
});
const transient = (e) => e instanceof ApiError && (e.status === 0 || e.status >= 500 || e.status === 409 || e.status === 429);

// Upload `file` into the draft of dataset `dsId` as `path`. `on(event)` gets
// {phase: 'hash'|'upload'|'retry'|'done', loaded, total, rate (bytes/s),
// resumedFrom?, attempt?, wait?, error?}. Resolves with the draft file
// ({path, size, sha256, media_type}); rejects with the server's error (a
// wrong hash, a full quota, a bad name) or an AbortError when `signal`
// fires. `cancel` (also after an abort) deletes the server's upload.
export async function uploadDatasetFile(dsId, path, file, { on = () => {}, signal } = {}) {
  const total = file.size;
  if (total === 0) {
    // Nothing to resume: an empty file goes in one PUT.
    const r = await api.put(`/api/v1/datasets/${enc(dsId)}/draft/files/${path.split('/').map(enc).join('/')}`, new Blob([]));
    on({ phase: 'done', loaded: 0, total: 0, rate: 0 });
    return r && r.file ? r.file : r;
  }
  const key = storeKey(dsId, path, file);
  let saved = loadSaved(key), offset = null;
  if (saved) {
    try { offset = Number((await api.get(`/api/v1/uploads/${enc(saved.upload_id)}`)).offset); }
    catch (e) { if (!(e instanceof ApiError) || e.status !== 404) throw e; forget(key); saved = null; }   // expired or cancelled
  }
  if (!saved) {
    const sha256 = await sha256File(file, (n) => on({ phase: 'hash', loaded: n, total, rate: 0 }), signal);
    const r = await api.post(`/api/v1/datasets/${enc(dsId)}/uploads`, { path, size: total, sha256 });
    saved = { upload_id: r.upload_id, sha256 };
    offset = Number(r.offset) || 0;
    save(key, saved);
  }
  const id = saved.upload_id;
  const resumedFrom = offset;
  // Rate over the last few seconds: samples of [time, bytes].
  const samples = [[performance.now(), offset]];
  const report = (loaded) => {
    const now = performance.now();
    samples.push([now, loaded]);
    while (samples.length > 2 && now - samples[0][0] > 3000) samples.shift();
    const [t0, b0] = samples[0];
    on({ phase: 'upload', loaded, total, rate: now > t0 ? ((loaded - b0) * 1000) / (now - t0) : 0, resumedFrom });
  };
  report(offset);
  let failures = 0;
  for (;;) {
    const start = offset;
    const blob = file.slice(start, Math.min(total, start + CHUNK));
    try {
      const r = await putChunk(id, start, blob, total, (n) => report(start + n), signal);
      failures = 0;
      offset = Number(r.offset);
      report(offset);
      if (r.done || offset >= total) {
        forget(key);
        on({ phase: 'done', loaded: total, total, rate: 0 });
        return r.file || { path, size: total, sha256: saved.sha256 };
      }
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      if (e instanceof ApiError && e.status === 404) { forget(key); throw new Error(`The upload of ${path} expired on the server; choose the file again to start over`); }
      if (e instanceof ApiError && e.status === 400 && /sha256|hash/i.test(e.message)) forget(key);   // the server discarded it
      if (!transient(e) || ++failures > RETRIES) throw e;
      const wait = Math.min(30000, 500 * 2 ** failures);
      on({ phase: 'retry', loaded: offset, total, rate: 0, attempt: failures, wait, error: e.message });
      await sleep(wait, signal);
      // The server's durable offset: a dropped chunk may have landed in part.
      try { offset = Number((await api.get(`/api/v1/uploads/${enc(id)}`)).offset); }
      catch (e2) {
        if (e2 instanceof ApiError && e2.status === 404) { forget(key); throw new Error(`The upload of ${path} expired on the server; choose the file again to start over`); }
        // still offline: the next PUT fails again and waits longer
      }
    }
  }
}

// Stop an upload for good: the server drops its bytes and the saved id goes.
export async function cancelUpload(dsId, path, file) {
  const key = storeKey(dsId, path, file);
  const saved = loadSaved(key);
  forget(key);
  if (saved) { try { await api.del(`/api/v1/uploads/${enc(saved.upload_id)}`); } catch { /* gone already */ } }
}
