// Projects: list and create; one project's files (upload, download, edit,
// delete, new notebook; the list follows the working tree live, so files a
// kernel writes show within a second; workspace usage), versions (save,
// restore with a mode, diff, large files kept out of git) and fork. The file
// editor saves conditionally (If-Match) and asks on a stale write.
import { api, listAll, filePath, request, ApiError, readFile, writeFile, isStale } from '../api.js';
import { h, clear, table, busy, toast, when, bytes, download, modal, staleDialog, visiblePoll, workspaceMeter, errorBox } from '../ui.js';
import { app, navigate, onLeave } from '../app.js';
import { kernelsPanel } from '../widgets.js';
import { importNotebook, isRefused, shareDialog } from '../notebook_io.js';

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
  const formError = h('div', { 'data-testid': 'create-project-error' });
  const form = h('form', {
    class: 'inline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      const btn = form.querySelector('button');
      clear(formError);
      btn.disabled = true;
      try {
        const p = await api.post('/api/v1/projects', { name: name.value.trim(), description: desc.value, visibility: vis.value });
        toast(`Created ${p.name}`);
        navigate(`/projects/${enc(p.id)}`);
      } catch (e) {
        // e.g. 409: the user has a project of that name already
        clear(formError, errorBox(e));
        name.focus();
      } finally { btn.disabled = false; }
    },
  }, name, desc, vis, h('button', { type: 'submit', class: 'primary' }, 'Create project'));
  const rows = items.map((p) => h('tr', null,
    h('td', null, h('a', { href: `/projects/${enc(p.id)}` }, p.name)),
    h('td', null, p.description || ''),
    h('td', null, p.owner), h('td', null, h('span', { class: `badge ${p.visibility}` }, p.visibility)),
    h('td', null, p.forked_from ? 'fork' : ''), h('td', null, when(p.updated_at))));
  return h('div', { class: 'page' }, h('h1', null, 'Projects'),
    h('section', { class: 'card' }, h('h2', null, 'New project'), form, formError),
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
  const info = h('p', { class: 'muted', 'data-testid': 'project-info' });
  const showInfo = () => info.replaceChildren(`${p.owner} · ${p.visibility}${p.forked_from ? ' · forked' : ''} · ${bytes(p.size_bytes)}`, p.description ? ` · ${p.description}` : '');
  showInfo();
  const shareBtn = h('button', { 'data-testid': 'project-share', onclick: () => shareDialog(p, null).then(showInfo) }, 'Share');
  const page = h('div', { class: 'page' },
    h('div', { class: 'page-head' },
      h('div', null, h('h1', null, p.name), info),
      h('div', { class: 'inline-form' }, shareBtn, forkBtn)),
    tabs, body);
  if (tab === 'versions') await versionsTab(body, id);
  else await filesTab(body, id, app.me && app.me.id === p.owner_id);
  const kernels = kernelsPanel({ projectId: id });
  onLeave(() => kernels.stop());
  page.append(kernels.el);
  if (tab !== 'versions' && p.can_write === true) {   // lazy: not in the entry
    const save = await (await import('../datasets_save.js')).saveProjectAsDataset(p);
    if (save) page.append(save);
  }
  return page;
}

// How often the file list follows the working tree while the tab is visible.
const FILES_POLL_MS = 1000;

// `mine`: the caller owns the project; others (it is public) read its
// notebooks on the read-only page and cannot import into it.
async function filesTab(body, id, mine = true) {
  const listUrl = `${projUrl(id)}/files`;
  let files = await listAll(listUrl);
  const upload = h('input', { type: 'file', multiple: true, 'aria-label': 'Upload files' });
  const uploadBtn = h('button', {
    onclick: () => busy(uploadBtn, async () => {
      for (const f of upload.files) await api.put(filePath(id, f.name), f);
      toast(`Uploaded ${upload.files.length} file(s)`);
      upload.value = '';
      await refresh();
    }),
  }, 'Upload');
  const newName = h('input', { placeholder: 'notebook.ipynb or script.py', 'aria-label': 'New file name' });
  const newBtn = h('button', {
    class: 'primary',
    onclick: () => busy(newBtn, async () => {
      const path = newName.value.trim();
      if (!path) throw new Error('Give the file a name');
      const isNb = path.endsWith('.ipynb');
      // Create only (If-None-Match: *): an existing file of that name is opened, never emptied.
      try { await api.put(filePath(id, path), isNb ? EMPTY_NOTEBOOK() : '', { headers: { 'If-None-Match': '*' } }); }
      catch (e) { if (isStale(e)) toast(`${path} exists already: opening it`); else throw e; }
      navigate(isNb ? `/projects/${enc(id)}/notebook/${encPath(path)}` : `/projects/${enc(id)}/edit/${encPath(path)}`);
    }),
  }, 'Create file');
  // "New notebook": an empty nbformat v4 notebook named Untitled.ipynb,
  // Untitled1.ipynb, ... (the first name free; If-None-Match: * never
  // overwrites one made meanwhile), opened at once.
  const newNb = h('button', {
    'data-testid': 'new-notebook',
    onclick: () => busy(newNb, async () => {
      const taken = new Set(files.map((f) => f.path));
      for (let i = 0; i < 1000; i++) {
        const path = `Untitled${i || ''}.ipynb`;
        if (taken.has(path)) continue;
        try { await api.put(filePath(id, path), EMPTY_NOTEBOOK(), { headers: { 'If-None-Match': '*' } }); }
        catch (e) { if (isStale(e)) { taken.add(path); continue; } throw e; }
        navigate(`/projects/${enc(id)}/notebook/${encPath(path)}`);
        return;
      }
      throw new Error('No free Untitled name');
    }),
  }, 'New notebook');

  // "Import notebook": an .ipynb from the computer, validated by the server
  // (a refusal names the bad cell); an existing file of that name is
  // replaced only after asking.
  const importMsg = h('div', { class: 'nbio-import-msg', 'data-testid': 'import-message', 'aria-live': 'polite' });
  const picker = h('input', { type: 'file', accept: '.ipynb,application/x-ipynb+json', hidden: true, 'data-testid': 'import-file' });
  const importBtn = h('button', { 'data-testid': 'import-notebook', title: 'Upload a Jupyter, Colab or Kaggle notebook (.ipynb)', onclick: () => picker.click() }, 'Import notebook');
  picker.addEventListener('change', () => busy(importBtn, async () => {
    const file = picker.files[0];
    picker.value = '';
    if (!file) return;
    importMsg.replaceChildren();
    let path;
    try { path = await importNotebook(id, file); }
    catch (e) {
      if (!isRefused(e)) throw e;
      importMsg.replaceChildren(h('div', { class: 'error-box', role: 'alert', 'data-testid': 'import-error' }, `${file.name} was not imported: ${e.message}`));
      return;
    }
    if (!path) return;
    toast(`Imported ${path}`);
    importMsg.replaceChildren(h('span', { 'data-testid': 'import-ok' }, `Imported ${path} · `, h('a', { href: `/projects/${enc(id)}/notebook/${encPath(path)}` }, 'open it')));
    await refresh();
  }));

  // Rows are kept per path and rebuilt only when the file's size or time
  // changes, so a refresh with no change touches no DOM.
  const rowCache = new Map();   // path -> {key, tr}
  const tbody = h('tbody');
  const tbl = h('table', { class: 'table', 'data-testid': 'files' },
    h('thead', null, h('tr', null, ['File', 'Size', 'Modified', ''].map((x) => h('th', null, x)))), tbody);
  const row = (f) => {
    const open = f.path.endsWith('.ipynb') ? `/projects/${enc(id)}/${mine ? 'notebook' : 'share'}/${encPath(f.path)}` : `/projects/${enc(id)}/edit/${encPath(f.path)}`;
    const dl = h('button', { class: 'small', onclick: () => busy(dl, async () => download(await (await request('GET', filePath(id, f.path), { raw: true })).blob(), f.path.split('/').pop())) }, 'Download');
    const del = h('button', {
      class: 'small danger',
      onclick: () => { if (confirm(`Delete ${f.path}?`)) busy(del, async () => { await api.del(filePath(id, f.path)); await refresh(); }); },
    }, 'Delete');
    return h('tr', { 'data-path': f.path }, h('td', null, h('a', { href: open }, f.path)), h('td', null, bytes(f.size)), h('td', null, when(f.modified_at)), h('td', { class: 'actions' }, dl, del));
  };
  let shown = null;
  function show(list) {
    const sig = list.map((f) => `${f.path}\u0000${f.size}\u0000${f.modified_at}`).join('\u0001');
    if (sig === shown) return false;
    shown = sig;
    const seen = new Set();
    const rows = list.map((f) => {
      const key = `${f.size}\u0000${f.modified_at}`;
      seen.add(f.path);
      let r = rowCache.get(f.path);
      if (!r || r.key !== key) { r = { key, tr: row(f) }; rowCache.set(f.path, r); }
      return r.tr;
    });
    for (const p of [...rowCache.keys()]) if (!seen.has(p)) rowCache.delete(p);
    if (rows.length) tbody.replaceChildren(...rows);
    else tbody.replaceChildren(h('tr', null, h('td', { colspan: 4, class: 'muted' }, 'Nothing yet.')));
    return true;
  }
  show(files);

  // Workspace usage and limit (GET /api/v1/quota .workspace), refreshed when
  // the file list changes.
  const usage = h('span', { 'data-testid': 'workspace-box' });
  const loadUsage = async () => {
    try { const q = await api.get('/api/v1/quota'); clear(usage, workspaceMeter(q.workspace, id)); } catch { /* keep the last value */ }
  };

  // Follow the working tree: files a kernel writes appear without a reload.
  // One request at a time, at most every FILES_POLL_MS while the tab is
  // visible, paused while it is hidden. When the server tags the list with an
  // ETag, the poll asks If-None-Match and a 304 costs nothing.
  let listTag = null;
  async function refresh() {
    let res;
    try { res = await request('GET', listUrl, { raw: true, query: { limit: 500 }, headers: listTag ? { 'If-None-Match': listTag } : {} }); }
    catch (e) { if (e instanceof ApiError && e.status === 304) return; throw e; }
    const j = await res.json();
    let list = Array.isArray(j) ? j : j.items || [];
    if (j.next_cursor) { list = await listAll(listUrl); listTag = null; }
    else listTag = res.headers.get('ETag');
    files = list;
    if (show(list)) loadUsage();
  }
  onLeave(visiblePoll(refresh, { period: FILES_POLL_MS }));
  loadUsage();

  clear(body,
    h('section', { class: 'card' }, h('div', { class: 'inline-form' }, newNb, mine ? importBtn : null, picker, h('span', { class: 'sep' }), newName, newBtn, h('span', { class: 'sep' }), upload, uploadBtn), importMsg),
    h('section', { class: 'card' }, h('div', { class: 'files-head' }, h('span', { class: 'muted small-text' }, 'Files written by a running kernel show here as they appear.'), usage), tbl));
}

// Ask how to restore a version: keep files the version lacks (the default),
// or make the workspace exactly the version. Resolves with the mode or null.
export function askRestoreMode(v) {
  const choice = (value, label, help, checked) => h('label', { class: 'choice' },
    h('input', { type: 'radio', name: 'restore-mode', value, checked, 'data-testid': `restore-${value}` }),
    h('span', null, label, h('small', null, help)));
  return modal({
    title: `Restore "${v.message}"?`, testid: 'restore-dialog',
    message: 'The current working tree is saved as a version first, so you can come back to it.',
    body: h('div', { role: 'radiogroup', 'aria-label': 'Restore mode' },
      choice('keep_untracked', 'Keep files that are not in this version', 'Files of the version are put back; other files (new data, checkpoints, large files) stay as they are.', true),
      choice('exact', 'Make the workspace exactly this version (deletes other files)', 'Every file the version does not have is deleted from the workspace (large and .eddyignore\'d files stay; the autosave can bring the rest back).', false)),
    actions: [{ label: 'Restore', value: 'restore', kind: 'primary', testid: 'restore-confirm' }],
    read: (_, dlg) => dlg.querySelector('input[name=restore-mode]:checked').value,
  });
}

const shortSha = (s) => (s ? String(s).slice(0, 12) : '');

// The files a version kept out of git (over the size threshold or matched by
// .eddyignore): listed, never versioned.
function largeFilesRow(v, cols) {
  const lf = v.large_files || [];
  if (!lf.length) return null;
  return h('tr', { class: 'large-files', 'data-testid': 'large-files', 'data-version': v.id },
    h('td', { colspan: cols },
      h('strong', null, `Large files, not versioned (${lf.length})`),
      h('span', { class: 'muted' }, ' (kept in the workspace only: over the size limit or matched by .eddyignore; restoring this version does not bring them back)'),
      h('ul', null, lf.map((f) => h('li', null, h('code', null, f.path), ` · ${bytes(f.size)} · sha256 `, h('code', { title: f.sha256 }, shortSha(f.sha256)),
        f.reason === 'eddyignore' ? ' · matched by .eddyignore' : f.reason === 'large' ? ' · over the size limit' : null)))));
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
      onclick: async () => {
        const mode = await askRestoreMode(v);
        if (!mode) return;
        busy(restore, async () => {
          const r = await api.post(`${projUrl(id)}/versions/${enc(v.id)}/restore`, { mode });
          const saved = r && r.autosave && r.autosave.id ? ` The state before is version ${String(r.autosave.id).slice(0, 10)}.` : '';
          toast((mode === 'exact' ? 'Restored: the workspace is exactly this version.' : 'Restored; files not in the version were kept.') + saved);
          navigate(`/projects/${enc(id)}`);
        });
      },
    }, 'Restore');
    const fileSel = h('select', { 'aria-label': 'File to compare' }, (v.files || []).map((f) => h('option', { value: f }, f)));
    const diffBtn = h('button', { class: 'small', onclick: () => busy(diffBtn, () => showDiff(diffBox, id, fileSel.value, v.id, 'working')) }, 'Diff vs working tree');
    const lf = (v.large_files || []).length;
    return [h('tr', { 'data-version': v.id }, h('td', null, h('code', null, v.id.slice(0, 10))), h('td', null, v.message, lf ? h('span', { class: 'badge', title: 'large files, not versioned' }, ` +${lf} large`) : null),
      h('td', null, v.author), h('td', null, when(v.created_at)),
      h('td', { class: 'actions' }, restore, (v.files || []).length ? [fileSel, diffBtn] : null)),
    largeFilesRow(v, 5)];
  });
  clear(body,
    h('section', { class: 'card' }, h('div', { class: 'inline-form' }, msg, saveBtn)),
    compareBar(diffBox, id, versions),
    h('section', { class: 'card' }, table(['Version', 'Message', 'Author', 'When', ''], rows.flat().filter(Boolean), { 'data-testid': 'versions' })),
    diffBox);
}

// Compare any two versions, or a version and the working tree: pick a file
// (any a version holds) and the two sides. The diff code is loaded on first
// use (web/src/nbdiff.js).
function compareBar(diffBox, id, versions) {
  if (!versions.length) return null;
  const files = [...new Set(versions.flatMap((v) => v.files || []))].sort();
  const sideSel = (testid, selected) => h('select', { 'aria-label': testid === 'compare-from' ? 'Compare from' : 'Compare to', 'data-testid': testid },
    h('option', { value: 'working', selected: selected === 'working' ? true : null }, 'working tree'),
    versions.map((v) => h('option', { value: v.id, selected: selected === v.id ? true : null }, `${v.id.slice(0, 10)} · ${v.message}`)));
  const fileSel = h('select', { 'aria-label': 'File to compare', 'data-testid': 'compare-file' }, files.map((f) => h('option', { value: f }, f)));
  const from = sideSel('compare-from', versions[1] ? versions[1].id : versions[0].id);
  const to = sideSel('compare-to', versions[1] ? versions[0].id : 'working');
  const btn = h('button', { class: 'small', 'data-testid': 'compare', onclick: () => busy(btn, () => showDiff(diffBox, id, fileSel.value, from.value, to.value)) }, 'Compare');
  return h('section', { class: 'card' }, h('div', { class: 'inline-form' }, 'Compare ', fileSel, ' from ', from, ' to ', to, btn));
}

async function showDiff(box, id, path, from, to) {
  if (!path) return;
  const nbdiff = await import('../nbdiff.js');
  await nbdiff.showDiff(box, id, path, from, to);
}

// A plain-text editor for one working-tree file. It remembers the ETag of what
// it loaded or saved and saves with If-Match; when the file changed elsewhere
// meanwhile (412) it asks: reload (discard mine) or overwrite (save mine).
// Someone who may not write the project (can_write false: another user of a
// public project, or a read-only key) gets the file read-only, no Save.
export async function fileEditorPage(id, path) {
  const p = await api.get(projUrl(id));
  const writable = p.can_write === true;
  let text, etag = null;
  const load = async () => {
    try { const r = await readFile(id, path); text = await r.res.text(); etag = r.etag; }
    catch (e) { if (e instanceof ApiError && e.status === 404) { text = ''; etag = null; } else throw e; }
  };
  await load();
  const area = h('textarea', { class: 'editor', spellcheck: 'false', 'aria-label': `Contents of ${path}` });
  area.value = text;
  if (!writable) {
    area.readOnly = true;
    return h('div', { class: 'page wide' },
      h('div', { class: 'page-head' }, h('h1', null, h('a', { href: `/projects/${enc(id)}` }, p.name), ' / ', path),
        h('span', { class: 'muted', 'data-testid': 'read-only' }, 'Read only: not your project')),
      area);
  }
  const status = h('span', { class: 'muted', 'aria-live': 'polite', 'data-testid': 'save-status' }, 'Saved');
  const save = async () => {
    let force = false;
    for (;;) {
      try {
        const r = await writeFile(id, path, area.value, { etag: force ? null : etag });
        etag = r.etag;
        status.textContent = `Saved at ${new Date().toLocaleTimeString()}`;
        return;
      } catch (e) {
        if (!isStale(e)) throw e;
        const choice = await staleDialog(path);
        if (choice === 'reload') {
          await load();
          area.value = text;
          status.textContent = 'Reloaded: your changes were discarded';
          return;
        }
        if (choice !== 'overwrite') { status.textContent = 'Not saved: the file changed elsewhere'; return; }
        force = true;   // save mine anyway
      }
    }
  };
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

