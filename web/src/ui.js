// Small DOM helpers: h() builds elements, plus formatting and notices.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
      else if (k === 'class') el.className = v;
      else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function coins(mcoins) {
  if (mcoins === undefined || mcoins === null) return '—';
  return (Number(mcoins) / 1000).toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 3 }) + ' A';
}

export function duration(ms) {
  if (ms === undefined || ms === null || ms < 0) return '—';
  const s = Math.round(ms / 1000), hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60);
  if (hh) return `${hh} h ${mm} min`;
  if (mm) return `${mm} min ${s % 60} s`;
  return `${s} s`;
}

export function when(t) {
  if (!t) return '—';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

export function bytes(n) {
  if (n === undefined || n === null) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1073741824) return `${(n / 1048576).toFixed(1)} MB`;
  return `${(n / 1073741824).toFixed(1)} GB`;
}

// A size in binary units for usage and limits: "1.2 GiB", "5 GiB", "340 MiB".
export function size(n) {
  if (n === undefined || n === null || isNaN(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, v = Number(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  const s = i === 0 || Number.isInteger(v) ? String(Math.round(v)) : v < 10 ? v.toFixed(1) : v.toFixed(0);
  return `${s.replace(/\.0$/, '')} ${units[i]}`;
}

// Workspace usage from GET /api/v1/quota's `workspace` ({used_bytes,
// limit_bytes, projects: [{id, used_bytes}]}; the limit is per project, and
// null or 0 means none): "1.2 GiB of 5 GiB" for one project (projectId), or
// for the fullest of the user's projects; null when the server reports none.
export function workspaceUsage(w, projectId) {
  if (!w || w.used_bytes === undefined || w.used_bytes === null) return null;
  const limit = Number(w.limit_bytes) || 0;
  const projects = Array.isArray(w.projects) ? w.projects : null;
  let used = Number(w.used_bytes);
  if (projects && projectId !== undefined) {
    const p = projects.find((x) => String(x.id) === String(projectId));
    used = p ? Number(p.used_bytes) : 0;
  } else if (projects && projects.length && limit) {
    used = Math.max(...projects.map((x) => Number(x.used_bytes) || 0));   // the fullest project
  }
  return {
    text: limit ? `${size(used)} of ${size(limit)}` : `${size(used)} (no limit)`,
    fraction: limit ? Math.min(1, used / limit) : null,
    total: Number(w.used_bytes), limit, projects: projects ? projects.length : null,
  };
}

// A workspace usage line with a small meter ("Workspace: 1.2 GiB of 5 GiB").
export function workspaceMeter(w, projectId, testid = 'workspace-usage') {
  const u = workspaceUsage(w, projectId);
  if (!u) return null;
  const full = u.fraction !== null && u.fraction >= 0.9;
  return h('span', { class: `ws-usage${full ? ' full' : ''}`, 'data-testid': testid },
    u.fraction !== null ? h('meter', { min: '0', max: '1', low: '0.75', high: '0.9', optimum: '0', value: String(u.fraction), 'aria-hidden': 'true' }) : null,
    `Workspace: ${u.text}`);
}

let toastBox;
export function toast(msg, kind = 'info') {
  if (!toastBox) { toastBox = h('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' }); document.body.append(toastBox); }
  const t = h('div', { class: `toast ${kind}` }, msg);
  toastBox.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 7000 : 3500);
}

export function errorBox(err) {
  return h('div', { class: 'error-box', role: 'alert' }, err && err.message ? err.message : String(err));
}

// The state a page shows when the server has no such route yet.
export function unavailable(what) {
  return h('div', { class: 'unavailable', 'data-testid': 'unavailable' },
    h('strong', null, `${what}: not available on this server`),
    h('p', null, 'This Eddy server does not offer this feature yet. The page will work once it does.'));
}

export function table(headers, rows, attrs = {}) {
  return h('table', { class: 'table', ...attrs },
    h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
    h('tbody', null, rows.length ? rows : h('tr', null, h('td', { colspan: headers.length, class: 'muted' }, 'Nothing yet.'))));
}

// A labelled form field.
export function field(label, input) {
  return h('label', { class: 'field' }, h('span', null, label), input);
}

// Run an async action from a button, disabling it meanwhile and reporting errors.
export async function busy(btn, fn) {
  if (btn) btn.disabled = true;
  try { return await fn(); }
  catch (e) { toast(e.message || String(e), 'error'); return undefined; }
  finally { if (btn) btn.disabled = false; }
}

// Trigger a download of `blob` as `name` (no tokens in URLs: blobs are fetched with the cookie).
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// A modal dialog (the native <dialog>, so focus stays inside and Esc cancels).
// `actions` are buttons [{label, value, kind?, testid?}]; resolves with the
// value of the one pressed, or null when cancelled. `body` may be a Node, or a
// function given the dialog that returns one; `read(value)` turns the pressed
// value into the result (e.g. a form's choice); `cancelLabel` names the
// button that closes it without a choice.
export function modal({ title, message, body, actions, testid, read, cancelLabel = 'Cancel' }) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { class: 'modal', 'data-testid': testid, 'aria-labelledby': 'modal-title' });
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      if (dlg.open) dlg.close();
      dlg.remove();
      resolve(v);
    };
    const buttons = actions.map((a) => h('button', {
      type: 'button', class: a.kind || null, 'data-testid': a.testid, 'data-value': a.value,
      onclick: () => finish(read ? read(a.value, dlg) : a.value),
    }, a.label));
    const cancel = h('button', { type: 'button', autofocus: true, onclick: () => finish(null) }, cancelLabel);
    append(dlg, [h('h2', { id: 'modal-title' }, title),
      message ? h('p', null, message) : null,
      typeof body === 'function' ? body(dlg) : body,
      h('div', { class: 'modal-actions' }, buttons, cancel)]);
    dlg.addEventListener('cancel', (ev) => { ev.preventDefault(); finish(null); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// After a 412 on a save: "reload" (discard mine), "overwrite" (save mine
// anyway) or null (cancelled, nothing saved).
export function staleDialog(path, detail) {
  return modal({
    title: 'This file changed since you opened it', testid: 'stale-dialog',
    message: `${path} was changed elsewhere (in another tab, by code in a kernel, or through the API) after this page loaded it.${detail ? ` ${detail}` : ''}`,
    actions: [
      { label: 'Reload (discard mine)', value: 'reload', testid: 'stale-reload' },
      { label: 'Overwrite (save mine anyway)', value: 'overwrite', kind: 'danger', testid: 'stale-overwrite' },
    ],
  });
}

// Run `fn` about every `period` ms (start to start) while the tab is visible,
// never two at once. Paused while the tab is hidden and run at once when it
// shows again; after a failure the wait doubles, up to `maxWait`. Returns stop().
export function visiblePoll(fn, { period = 1000, maxWait = 30000 } = {}) {
  let stopped = false, timer = null, running = false, wait = period;
  const hidden = () => document.visibilityState === 'hidden';
  const schedule = (ms) => { clearTimeout(timer); timer = setTimeout(tick, ms); };
  async function tick() {
    timer = null;
    if (stopped || running || hidden()) return;
    running = true;
    const t0 = Date.now();
    try { await fn(); wait = period; } catch { wait = Math.min(maxWait, wait * 2); }
    running = false;
    if (!stopped && !hidden()) schedule(Math.max(0, t0 + wait - Date.now()));
  }
  const onVis = () => { if (!stopped && !hidden() && !running && !timer) schedule(0); };
  document.addEventListener('visibilitychange', onVis);
  schedule(period);
  return () => { stopped = true; clearTimeout(timer); document.removeEventListener('visibilitychange', onVis); };
}
