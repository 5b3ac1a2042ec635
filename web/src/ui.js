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
  return `${(n / 1048576).toFixed(1)} MB`;
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
