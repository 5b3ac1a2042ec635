// Projects: list and create; one project's files (upload, download, edit,
// delete, new notebook), versions (save, restore, diff) and fork.
import { api, listAll, filePath, request, ApiError } from '../api.js';
import { h, clear, table, field, busy, toast, when, bytes, download, errorBox } from '../ui.js';
import { navigate } from '../main.js';
import { lineDiff } from '../diff.js';

const enc = encodeURIComponent;
const projUrl = (id) => `/api/v1/projects/${enc(id)}`;
const encPath = (p) => p.split('/').map(enc).join('/');

export const EMPTY_NOTEBOOK = () => JSON.stringify({
  nbformat: 4, nbformat_minor: 5,
  metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
    language_info: { name: 'python' } },
  cells: [{ cell_type: 'code', id: crypto.randomUUID().slice(0, 8), metadata: {}, source: '', outputs: [], execution_count: null }],
}, null, 1);

export async function projectsPage() {
  const items = await listAll('/api/v1/projects');
  const name = h('input', { name: 'name', placeholder: 'my-project', required: true, 'aria-label': 'Project name' });
  const desc = h('input', { name: 'description', placeholder: 'What is it about?', 'aria-label': 'Description' });
  const vis = h('select', { name: 'visibility', 'aria-label': 'Visibility' }, h('option', { value: 'private' }, 'private'), h('option', { value: 'public' }, 'public'));
  const form = h('form', {
    class: 'inline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      const btn = form.querySelector('button');
      const p = await busy(btn, () => api.post('/api/v1/projects', { name: name.value.trim(), description: desc.value, visibility: vis.value }));
      if (p) { toast(`Created ${p.name}`); navigate(`/projects/${enc(p.id)}`); }
    },
  }, name, desc, vis, h('button', { type: 'submit', class: 'primary' }, 'Create project'));
  const rows = items.map((p) => h('tr', null,
    h('td', null, h('a', { href: `/projects/${enc(p.id)}` }, p.name)),
    h('td', null, p.description || ''),
    h('td', null, p.owner), h('td', null, h('span', { class: `badge ${p.visibility}` }, p.visibility)),
    h('td', null, p.forked_from ? 'fork' : ''), h('td', null, when(p.updated_at))));
  return h('div', { class: 'page' }, h('h1', null, 'Projects'),
    h('section', { class: 'card' }, h('h2', null, 'New project'), form),
    h('section', { class: 'card' }, table(['Name', 'Description', 'Owner', 'Visibility', '', 'Updated'], rows, { 'data-testid': 'projects' })));
}

export async function projectPage(id) {
  const p = await api.get(projUrl(id));
  const tab = new URLSearchParams(location.search).get('tab') || 'files';
  const body = h('div');
  const tabs = h('div', { class: 'tabs', role: 'tablist' },
    ['files', 'versions'].map((t) => h('a', { href: `/projects/${enc(id)}?tab=${t}`, role: 'tab', 'aria-selected': String(t === tab), class: t === tab ? 'active' : null }, t[0].toUpperCase() + t.slice(1))));
  const forkBtn = h('button', {
    onclick: async () => {
      const f = await busy(forkBtn, () => api.post(`${projUrl(id)}/fork`));
      if (f) { toast(`Forked into ${f.name}`); navigate(`/projects/${enc(f.id)}`); }
    },
  }, 'Fork');
  const page = h('div', { class: 'page' },
    h('div', { class: 'page-head' },
      h('div', null, h('h1', null, p.name), h('p', { class: 'muted' }, `${p.owner} · ${p.visibility}${p.forked_from ? ' · forked' : ''} · ${bytes(p.size_bytes)}`, p.description ? ` · ${p.description}` : '')),
      forkBtn),
    tabs, body);
  if (tab === 'versions') await versionsTab(body, id);
  else await filesTab(body, id);
  return page;
}

async function filesTab(body, id) {
  const files = await listAll(`${projUrl(id)}/files`);
  const upload = h('input', { type: 'file', multiple: true, 'aria-label': 'Upload files' });
  const uploadBtn = h('button', {
    onclick: () => busy(uploadBtn, async () => {
      for (const f of upload.files) await api.put(filePath(id, f.name), f);
      toast(`Uploaded ${upload.files.length} file(s)`);
      navigate(location.pathname + location.search, { replace: true });
    }),
  }, 'Upload');
  const newName = h('input', { placeholder: 'notebook.ipynb or script.py', 'aria-label': 'New file name' });
  const newBtn = h('button', {
    class: 'primary',
    onclick: () => busy(newBtn, async () => {
      const path = newName.value.trim();
      if (!path) throw new Error('Give the file a name');
      const isNb = path.endsWith('.ipynb');
      await api.put(filePath(id, path), isNb ? EMPTY_NOTEBOOK() : '');
      navigate(isNb ? `/projects/${enc(id)}/notebook/${encPath(path)}` : `/projects/${enc(id)}/edit/${encPath(path)}`);
    }),
  }, 'Create file');
  const rows = files.map((f) => {
    const open = f.path.endsWith('.ipynb') ? `/projects/${enc(id)}/notebook/${encPath(f.path)}` : `/projects/${enc(id)}/edit/${encPath(f.path)}`;
    const dl = h('button', { class: 'small', onclick: () => busy(dl, async () => download(await (await request('GET', filePath(id, f.path), { raw: true })).blob(), f.path.split('/').pop())) }, 'Download');
    const del = h('button', {
      class: 'small danger',
      onclick: () => { if (confirm(`Delete ${f.path}?`)) busy(del, async () => { await api.del(filePath(id, f.path)); navigate(location.pathname + location.search, { replace: true }); }); },
    }, 'Delete');
    return h('tr', null, h('td', null, h('a', { href: open }, f.path)), h('td', null, bytes(f.size)), h('td', null, when(f.modified_at)), h('td', { class: 'actions' }, dl, del));
  });
  clear(body,
    h('section', { class: 'card' }, h('div', { class: 'inline-form' }, newName, newBtn, h('span', { class: 'sep' }), upload, uploadBtn)),
    h('section', { class: 'card' }, table(['File', 'Size', 'Modified', ''], rows, { 'data-testid': 'files' })));
}

async function versionsTab(body, id) {
  const versions = await listAll(`${projUrl(id)}/versions`);
  const msg = h('input', { placeholder: 'What changed?', 'aria-label': 'Version message' });
  const saveBtn = h('button', {
    class: 'primary',
    onclick: () => busy(saveBtn, async () => {
      await api.post(`${projUrl(id)}/versions`, { message: msg.value || 'Saved from the web' });
      toast('Version saved');
      navigate(location.pathname + location.search, { replace: true });
    }),
  }, 'Save version');
  const diffBox = h('div', { class: 'diff-box' });
  const rows = versions.map((v) => {
    const restore = h('button', {
      class: 'small',
      onclick: () => { if (confirm(`Restore the working tree to "${v.message}"? The current state is autosaved first.`)) busy(restore, async () => { await api.post(`${projUrl(id)}/versions/${enc(v.id)}/restore`); toast('Restored'); navigate(`/projects/${enc(id)}`); }); },
    }, 'Restore');
    const fileSel = h('select', { 'aria-label': 'File to compare' }, (v.files || []).map((f) => h('option', { value: f }, f)));
    const diffBtn = h('button', { class: 'small', onclick: () => busy(diffBtn, () => showDiff(diffBox, id, v, fileSel.value)) }, 'Diff vs working tree');
    return h('tr', null, h('td', null, h('code', null, v.id.slice(0, 10))), h('td', null, v.message), h('td', null, v.author), h('td', null, when(v.created_at)),
      h('td', { class: 'actions' }, restore, (v.files || []).length ? [fileSel, diffBtn] : null));
  });
  clear(body,
    h('section', { class: 'card' }, h('div', { class: 'inline-form' }, msg, saveBtn)),
    h('section', { class: 'card' }, table(['Version', 'Message', 'Author', 'When', ''], rows, { 'data-testid': 'versions' })),
    diffBox);
}

async function fetchText(id, path, version) {
  try {
    const r = await request('GET', filePath(id, path), { raw: true, query: version ? { version } : undefined });
    return await r.text();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return '';
    throw e;
  }
}

async function showDiff(box, id, v, path) {
  if (!path) return;
  const [old, cur] = await Promise.all([fetchText(id, path, v.id), fetchText(id, path)]);
  const d = lineDiff(old, cur);
  const changed = d.filter((l) => l.op !== ' ').length;
  clear(box, h('section', { class: 'card' },
    h('h2', null, `${path}: ${v.id.slice(0, 10)} → working tree (${changed} changed line${changed === 1 ? '' : 's'})`),
    h('pre', { class: 'diff', 'data-testid': 'diff' }, d.map((l) => h('div', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : null }, `${l.op} ${l.text}`)))));
}

export async function fileEditorPage(id, path) {
  const p = await api.get(projUrl(id));
  let text;
  try { text = await (await request('GET', filePath(id, path), { raw: true })).text(); }
  catch (e) { if (e instanceof ApiError && e.status === 404) text = ''; else throw e; }
  const area = h('textarea', { class: 'editor', spellcheck: 'false', 'aria-label': `Contents of ${path}` });
  area.value = text;
  const status = h('span', { class: 'muted', 'aria-live': 'polite' }, 'Saved');
  const save = async () => { await api.put(filePath(id, path), area.value); status.textContent = `Saved at ${new Date().toLocaleTimeString()}`; };
  const saveBtn = h('button', { class: 'primary', onclick: () => busy(saveBtn, save) }, 'Save');
  area.addEventListener('input', () => { status.textContent = 'Unsaved changes'; });
  area.addEventListener('keydown', (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === 's') { ev.preventDefault(); busy(saveBtn, save); }
    if (ev.key === 'Tab' && !ev.shiftKey) { ev.preventDefault(); area.setRangeText('    ', area.selectionStart, area.selectionEnd, 'end'); }
  });
  return h('div', { class: 'page wide' },
    h('div', { class: 'page-head' }, h('h1', null, h('a', { href: `/projects/${enc(id)}` }, p.name), ' / ', path), h('div', null, status, ' ', saveBtn)),
    area);
}

export { errorBox };
