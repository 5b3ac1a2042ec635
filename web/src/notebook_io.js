// The notebook's Download ▾ menu (.ipynb, .py, .html) and Share dialog, and
// the import of an .ipynb into a project (the project page's "Import
// notebook"). .ipynb and .py come from the server's export route after the
// notebook is saved (GET /api/v1/projects/{id}/export/{path}?format=), so they
// are what the project holds; .html is made here from the page's notebook: a
// standalone file with the cells, Markdown rendered and outputs rendered by the
// app's own sanitising renderers (markdown.js, renderOutput), images inline,
// CSS inline and no script (a CSP in the file forbids any).
import { api, request, filePath, ApiError, isStale } from './api.js';
import { h, busy, toast, download, modal } from './ui.js';
import { app } from './app.js';
import { stripAnsi, nbText } from './output.js';
import './notebook_io.css';
// markdown.js and the notebook's renderOutput are loaded when an HTML file is
// made: the project page imports this module, and must not pull the notebook's
// chunk (CodeMirror, marked, KaTeX) into the app's first load.
const renderers = () => Promise.all([import('./markdown.js'), import('./pages/notebook.js'), import('dompurify')])
  .then(([m, n, d]) => ({ renderMarkdown: m.renderMarkdown, renderOutput: n.renderOutput, purify: d.default }));

const enc = encodeURIComponent;
const encPath = (p) => p.split('/').map(enc).join('/');
const baseName = (path) => path.split('/').pop().replace(/\.ipynb$/i, '');

// The read-only page of a notebook (share.js; anyone may open it while the
// project is public).
export const shareUrl = (projectId, path) => `${location.origin}/projects/${enc(projectId)}/share/${encPath(path)}`;

// ---- the toolbar element ----------------------------------------------------------

// What the notebook page puts in its toolbar: Download ▾ and Share. `nb` is
// the page's Notebook (projectId, path, project, toJSON(), save(), dirty).
export function notebookMenu(nb) {
  const items = [
    ['ipynb', 'Notebook (.ipynb)', () => downloadExport(nb, 'ipynb')],
    ['py', 'Python script (.py)', () => downloadExport(nb, 'py')],
    ['html', 'Web page (.html)', async () => download(new Blob([await notebookHtml(nb.toJSON(), `${nb.project.name} / ${nb.path}`)], { type: 'text/html;charset=utf-8' }), `${baseName(nb.path)}.html`)],
  ];
  const menu = h('div', { class: 'nbio-menu', role: 'menu', hidden: true });
  const btn = h('button', {
    class: 'small', 'aria-haspopup': 'menu', 'aria-expanded': 'false', 'data-testid': 'download-menu',
    title: 'Download the notebook', onmousedown: (ev) => ev.preventDefault(),
    onclick: () => (menu.hidden ? open() : close()),
  }, 'Download ▾');
  const close = () => { menu.hidden = true; btn.setAttribute('aria-expanded', 'false'); document.removeEventListener('mousedown', outside, true); };
  const outside = (ev) => { if (!wrap.contains(ev.target)) close(); };
  const open = () => { menu.hidden = false; btn.setAttribute('aria-expanded', 'true'); document.addEventListener('mousedown', outside, true); };
  for (const [fmt, label, fn] of items) {
    const it = h('button', {
      role: 'menuitem', class: 'nbio-item', 'data-testid': `download-${fmt}`, onmousedown: (ev) => ev.preventDefault(),
      onclick: () => { close(); busy(btn, fn).finally(() => nb.refocus?.()); },
    }, label);
    menu.append(it);
  }
  menu.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { ev.stopPropagation(); close(); btn.focus(); } });
  const wrap = h('span', { class: 'nbio' }, btn, menu);
  const share = h('button', {
    class: 'small', 'data-testid': 'share', title: 'Share a read-only link', onmousedown: (ev) => ev.preventDefault(),
    onclick: () => shareDialog(nb.project, nb.path).finally(() => nb.refocus?.()),
  }, 'Share');
  return h('span', { class: 'nbio-bar' }, wrap, share);
}

// Save if needed, then fetch the export route and hand the bytes to the browser.
async function downloadExport(nb, format) {
  if (nb.dirty || nb.saving) await nb.save();
  if (nb.dirty) throw new Error('The notebook could not be saved, so the download would not match it: save it first');
  const res = await request('GET', `/api/v1/projects/${enc(nb.projectId)}/export/${encPath(nb.path)}`, { raw: true, query: { format } });
  download(await res.blob(), `${baseName(nb.path)}.${format}`);
}

// ---- Share ------------------------------------------------------------------------

// The Share dialog: whether the project is public, a switch to change it
// (owner only; making it public asks first, since every file and version
// becomes readable by anyone), and the read-only link to copy. `project` is
// updated in place. Resolves when closed.
export function shareDialog(project, path) {
  const mine = app.me && app.me.id === project.owner_id;
  const url = path ? shareUrl(project.id, path) : `${location.origin}/projects/${enc(project.id)}`;
  const state = h('p', { 'data-testid': 'share-state' });
  const toggle = h('input', { type: 'checkbox', 'data-testid': 'share-public', disabled: !mine });
  const link = h('input', { class: 'nbio-link', readonly: true, value: url, 'aria-label': 'Link', 'data-testid': 'share-link', onfocus: (ev) => ev.target.select() });
  const copy = h('button', {
    type: 'button', 'data-testid': 'share-copy',
    onclick: async () => {
      try { await navigator.clipboard.writeText(url); }
      catch { link.focus(); link.select(); document.execCommand && document.execCommand('copy'); }
      toast('Link copied');
    },
  }, 'Copy link');
  const show = () => {
    const pub = project.visibility === 'public';
    toggle.checked = pub;
    state.replaceChildren(pub
      ? `${project.owner}/${project.name} is public: anyone with the link can read this ${path ? 'notebook (and every file of the project)' : 'project'} without signing in, and fork it to run it.`
      : `${project.owner}/${project.name} is private: only ${mine ? 'you' : 'its owner'} can open this link.`);
  };
  toggle.addEventListener('change', async () => {
    const want = toggle.checked ? 'public' : 'private';
    toggle.checked = !toggle.checked;   // until the server says so
    if (want === 'public') {
      const ok = await modal({
        title: `Make ${project.name} public?`, testid: 'share-confirm',
        message: 'Everything in the project becomes readable by anyone, signed in or not: every file of the working tree and every saved version, not only this notebook. Anyone can also fork it. You can make it private again later, but copies already made stay.',
        actions: [{ label: 'Make public', value: true, kind: 'primary', testid: 'share-confirm-public' }],
      });
      if (!ok) return;
    }
    toggle.disabled = true;
    try {
      const p = await api.patch(`/api/v1/projects/${enc(project.id)}`, { visibility: want });
      Object.assign(project, p);
      toast(want === 'public' ? `${project.name} is public` : `${project.name} is private`);
    } catch (e) { toast(e.message, 'error'); }
    toggle.disabled = !mine;
    show();
  });
  // Forks copy versions, not the working tree: let the owner save one here.
  const saveVersion = mine ? h('button', {
    type: 'button', class: 'small', 'data-testid': 'share-save-version',
    onclick: () => busy(saveVersion, async () => {
      await api.post(`/api/v1/projects/${enc(project.id)}/versions`, { message: `Share ${path || project.name}` });
      toast('Saved version: forks get it');
    }),
  }, 'Save a version now') : null;
  show();
  return modal({
    title: path ? `Share ${path}` : `Share ${project.name}`, testid: 'share-dialog', actions: [], cancelLabel: 'Close',
    body: h('div', { class: 'nbio-share' }, state,
      h('label', { class: 'nbio-switch' }, toggle, h('span', null, 'Public', mine ? null : h('small', null, ' (only the owner can change this)'))),
      h('div', { class: 'nbio-linkrow' }, link, copy),
      h('p', { class: 'muted small-text' }, 'Readers see the files as they are now; "Fork to run" copies the last saved version. ', saveVersion)),
  });
}

// ---- Import -----------------------------------------------------------------------

// Upload `file` (a File from a picker) into the project as `file.name`.
// Never replaces silently: the first PUT creates only (If-None-Match: *); when
// the name is taken, ask, then replace it (If-Match: *). Returns the path, or
// null when the user kept the existing file. A 422 (not a valid notebook)
// throws ApiError whose message names the bad cell.
export async function importNotebook(projectId, file) {
  const path = file.name;
  if (!/\.ipynb$/i.test(path)) throw new Error(`${path} is not a notebook (.ipynb)`);
  const put = (headers) => request('PUT', filePath(projectId, path), { body: file, headers, raw: true });
  try { await put({ 'If-None-Match': '*' }); return path; }
  catch (e) { if (!isStale(e)) throw e; }
  const ok = await modal({
    title: `Replace ${path}?`, testid: 'import-replace',
    message: `The project has a ${path} already. Replace it with the file you chose? (The one there now stays in the project's saved versions if a version holds it.)`,
    actions: [{ label: 'Replace', value: true, kind: 'danger', testid: 'import-replace-confirm' }],
  });
  if (!ok) return null;
  await put({ 'If-Match': '*' });
  return path;
}

// A 422 from the server: the notebook was refused (the message says where).
export const isRefused = (e) => e instanceof ApiError && e.status === 422;

// ---- HTML export ------------------------------------------------------------------

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));

// Sandboxed frames made by the app link its stylesheets; a file must not
// (they would be fetched from this server). In the page an HTML output's
// scripts are stopped by the frame's sandbox; in the file they are not even
// written: the frame's document goes through DOMPurify (its own <style>
// kept, <link> and every script, handler and javascript: URL removed).
function cleanFrames(el, purify) {
  for (const f of el.querySelectorAll('iframe')) {
    const doc = purify.sanitize(f.getAttribute('srcdoc') || '', { WHOLE_DOCUMENT: true, ADD_TAGS: ['style'], FORBID_TAGS: ['link', 'meta', 'base'] });
    f.setAttribute('srcdoc', `<!doctype html>${doc}`);
    f.removeAttribute('src');
  }
  for (const s of el.querySelectorAll('script, link, object, embed, base, meta')) s.remove();
  return el;
}

// One output for the file: a stream's whole text (the page may show only
// its tail), everything else as the notebook renders it.
function outputEl(o, renderOutput) {
  if (o.output_type === 'stream') return h('pre', { class: `out stream ${o.name === 'stderr' ? 'stderr' : ''}` }, stripAnsi(nbText(o.text)));
  return renderOutput(o);
}

const CSS = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;background:#f5f6f8;margin:0}
main{max-width:980px;margin:0 auto;padding:1.2rem}
header h1{font-size:1.25rem;margin:.2rem 0 1rem}
.cell{display:grid;grid-template-columns:4.5rem 1fr;gap:.4rem;padding:.35rem .45rem;background:#fff;border-radius:6px;margin:.35rem 0}
.prompt{font:13px ui-monospace,Menlo,Consolas,monospace;color:#5f6b7a;text-align:right;padding-top:.4rem}
.cell-body{min-width:0}
pre{font:13px/1.45 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;margin:.15rem 0}
pre.source{background:#fbfbfd;border:1px solid #dde1e7;border-radius:4px;padding:.45rem .6rem}
.out.stderr{background:#fff4f2}.out.error{background:#fff0ee;color:#8a1c12;padding:.3rem .5rem;border-radius:4px}
.out.image{max-width:100%;display:block}
.markdown{padding:.1rem .4rem;overflow-x:auto}.markdown img{max-width:100%}
iframe.sandboxed{width:100%;border:1px solid #dde1e7;border-radius:4px;background:#fff}
table{border-collapse:collapse}td,th{border:1px solid #ccd;padding:2px 6px}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em}
.katex-html{display:none}
`;

// The notebook `nb` (nbformat JSON) as a standalone HTML document (resolves
// with a string).
export async function notebookHtml(nb, title) {
  const { renderMarkdown, renderOutput, purify } = await renderers();
  const body = h('main');
  body.append(h('header', null, h('h1', null, title)));
  for (const c of nb.cells || []) {
    const src = nbText(c.source);
    const cell = h('div', { class: `cell ${c.cell_type}` });
    const inner = h('div', { class: 'cell-body' });
    if (c.cell_type === 'markdown') {
      const md = h('div', { class: 'markdown' });
      renderMarkdown(md, src, { attachments: c.attachments });   // attachment: images as data: URLs
      inner.append(md);
      cell.append(h('div', { class: 'prompt' }), inner);
    } else if (c.cell_type === 'code') {
      inner.append(h('pre', { class: 'source' }, src));
      const outs = h('div', { class: 'outputs' });
      for (const o of c.outputs || []) outs.append(outputEl(o, renderOutput));
      inner.append(outs);
      cell.append(h('div', { class: 'prompt' }, `In [${c.execution_count ?? ' '}]:`), inner);
    } else {
      inner.append(h('pre', { class: 'raw' }, src));
      cell.append(h('div', { class: 'prompt' }), inner);
    }
    body.append(cell);
  }
  cleanFrames(body, purify);
  // No script may run in the file: its own CSP says so, whatever it holds.
  const csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; frame-src 'self' about:";
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="generator" content="Eddy">` +
    `<title>${esc(title)}</title><style>${CSS}</style></head>\n<body>${body.outerHTML}</body></html>\n`;
}
