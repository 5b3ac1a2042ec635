// Talking to Eddy's REST API (API.md). The session lives in an HttpOnly cookie;
// the CSRF token is kept in memory only (from login or GET /api/v1/me) and sent
// as X-CSRF-Token on every state-changing request. No token ever goes in a URL.

let csrf = null;

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
  // A 404 from a route this server does not have yet (kernels, jobs, ...).
  get missingRoute() { return this.status === 404; }
}

export function setCsrf(token) { csrf = token || null; }

export async function request(method, path, { body, headers = {}, raw = false, query } = {}) {
  const h = { ...headers };
  if (method !== 'GET' && method !== 'HEAD' && csrf) h['X-CSRF-Token'] = csrf;
  let payload = body;
  if (body !== undefined && !(body instanceof Blob) && !(body instanceof ArrayBuffer) &&
      typeof body !== 'string') {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let url = path;
  if (query) {
    const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== null));
    if ([...q].length) url += '?' + q;
  }
  const res = await fetch(url, { method, headers: h, body: payload, credentials: 'same-origin' });
  if (!res.ok) {
    let code = 'error', message = `${res.status} ${res.statusText}`;
    try {
      const j = await res.json();
      if (j && j.error) { code = j.error.code; message = j.error.message; }
    } catch { /* not JSON */ }
    throw new ApiError(res.status, code, message);
  }
  if (raw) return res;
  if (res.status === 204) return null;
  const ct = res.headers.get('Content-Type') || '';
  return ct.includes('json') ? res.json() : res.text();
}

export const api = {
  get: (p, o) => request('GET', p, o),
  post: (p, body, o = {}) => request('POST', p, { ...o, body }),
  put: (p, body, o = {}) => request('PUT', p, { ...o, body }),
  patch: (p, body, o = {}) => request('PATCH', p, { ...o, body }),
  del: (p, o) => request('DELETE', p, o),
};

// Every item of a paginated list (API.md: {items, next_cursor}).
export async function listAll(path, query = {}, max = 2000) {
  const out = [];
  let cursor = null;
  do {
    const r = await api.get(path, { query: { ...query, limit: 500, cursor } });
    const items = Array.isArray(r) ? r : r.items || [];
    out.push(...items);
    cursor = Array.isArray(r) ? null : r.next_cursor;
  } while (cursor && out.length < max);
  return out;
}

// Path of a project file for the files API (each segment escaped, '/' kept).
export function filePath(projectId, path) {
  return `/api/v1/projects/${encodeURIComponent(projectId)}/files/` +
    path.split('/').map(encodeURIComponent).join('/');
}

// ---- workspace files with ETags (API.md "Workspaces") ----------------------------
// Reads return the file's ETag; a write sends it back as If-Match and the server
// answers 412 (`precondition_failed`) when the file changed meanwhile. A server
// without ETags sends none, and then writes go unconditionally, as before.

// GET a working-tree file: {res, etag} (`res` is the fetch Response).
export async function readFile(projectId, path, query) {
  const res = await request('GET', filePath(projectId, path), { raw: true, query });
  return { res, etag: res.headers.get('ETag') };
}

// PUT a working-tree file, conditional on `etag` when given: {etag, file}.
// A stale etag throws ApiError with status 412 (see isStale).
export async function writeFile(projectId, path, body, { etag } = {}) {
  const headers = etag ? { 'If-Match': etag } : {};
  const res = await request('PUT', filePath(projectId, path), { body, headers, raw: true });
  let file = null;
  try { file = await res.json(); } catch { /* no body */ }
  return { etag: res.headers.get('ETag'), file };
}

// A write refused because the file changed since it was read.
export function isStale(e) { return e instanceof ApiError && e.status === 412; }

// ---- datasets (API.md "Datasets") -----------------------------------------------
const encSegs = (p) => p.split('/').map(encodeURIComponent).join('/');
export const dsUrl = (id) => `/api/v1/datasets/${encodeURIComponent(id)}`;
// A version's file (n: a number or "latest"); a plain GET with the session
// cookie, so a link with `download` streams it to disk.
export const dsFileUrl = (id, n, path) => `${dsUrl(id)}/versions/${n}/files/${encSegs(path)}`;
export const dsArchiveUrl = (id, n) => `${dsUrl(id)}/versions/${n}/archive`;
export const dsPreviewUrl = (id, n, path) => `${dsUrl(id)}/versions/${n}/preview/${encSegs(path)}`;
export const dsDraftFileUrl = (id, path) => `${dsUrl(id)}/draft/files/${encSegs(path)}`;
// Where kernels and jobs see a dataset (read-only).
export const dsMountPath = (d) => `/home/aistudio/data/${d.owner}-${d.slug}/`;
// A 404 from the router itself (the server has no such route yet), rather
// than from a handler (no such dataset).
export const noRoute = (e) => e instanceof ApiError && e.status === 404 && /no route for/i.test(e.message || '');

// ---- competitions (API.md "Competitions") ----------------------------------------
export const compUrl = (id) => `/api/v1/competitions/${encodeURIComponent(id)}`;
// A time from the API as ms since the epoch: RFC 3339 (API.md), or a number
// of ms (or s); NaN when absent or unparsable.
export function apiTime(t) {
  if (t === undefined || t === null || t === '') return NaN;
  if (typeof t === 'number') return t < 1e11 ? t * 1000 : t;
  return /^\d+$/.test(t) ? apiTime(Number(t)) : Date.parse(t);
}
// The shapes a list answer may take: {items}, a bare array.
export const itemsOf = (r) => (Array.isArray(r) ? r : (r && r.items) || []);
