// The notebook's file browser: the project's working tree as folders that
// expand, kept live (files a kernel writes show within a second; one request
// a second while the panel is open and the tab visible, a 304 when nothing
// changed). A click opens a file (notebooks here, other files in the editor);
// each item's menu renames or moves, downloads and deletes (folders with
// everything in them). The toolbar makes files and folders and uploads; files
// and folders dropped from the desktop upload into the folder they are
// dropped on, each with a progress bar. Uploads never replace a file
// silently: the server refuses (If-None-Match: *) and the browser asks.
import { api, filePath, ApiError } from './api.js';
import { navigate } from './app.js';
import { h, clear, toast, modal, bytes, when, visiblePoll } from './ui.js';
import { treeLister, uploadFile, downloadFile, openUrl, dirUrl, baseName, parentOf } from './files.js';
import { EMPTY_NOTEBOOK } from './pages/projects.js';

const POLL_MS = 1000;
const MAX_ROWS = 2000;          // rows drawn at most (a kernel can write many files)
const DONE_LINGER_MS = 6000;    // a finished upload's row stays this long

// A small folder or page outline (SVG: no emoji font needed), tinted by kind.
const SVG = 'http://www.w3.org/2000/svg';
const SHAPES = {
  dir: 'M1.5 3.5h4l1.5 1.5h7.5v8h-13z',
  file: 'M3.5 1.5h6l3 3v10h-9z M9.5 1.5v3h3',
};
function icon(node) {
  const kind = node.dir ? 'dir' : /\.ipynb$/i.test(node.name) ? 'nb' : /\.py$/i.test(node.name) ? 'py' : 'file';
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('class', `fb-icon fb-icon-${kind}`);
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', node.dir ? SHAPES.dir : SHAPES.file);
  svg.append(path);
  return svg;
}

// The flat list as a tree of {name, path, dir, children: Map, size, modified_at}.
function buildTree(items) {
  const root = { name: '', path: '', dir: true, children: new Map() };
  const folder = (path) => {
    let node = root;
    for (const seg of path.split('/')) {
      let c = node.children.get(seg);
      if (!c || !c.dir) {
        c = { name: seg, path: node.path ? `${node.path}/${seg}` : seg, dir: true, children: new Map() };
        node.children.set(seg, c);
      }
      node = c;
    }
    return node;
  };
  for (const it of items) {
    if (it.type === 'directory') { folder(it.path).modified_at = it.modified_at; continue; }
    const parent = it.path.includes('/') ? folder(parentOf(it.path)) : root;
    const name = baseName(it.path);
    parent.children.set(name, { name, path: it.path, dir: false, size: it.size, modified_at: it.modified_at });
  }
  return root;
}

const sorted = (node) => [...node.children.values()].sort((a, b) => (a.dir !== b.dir ? (a.dir ? -1 : 1) : a.name.localeCompare(b.name)));
const countFiles = (node) => (node.dir ? [...node.children.values()].reduce((n, c) => n + countFiles(c), 0) : 1);
const inside = (path, folder) => path === folder || path.startsWith(`${folder}/`);

// What was dropped: [{file, rel}] (rel: the path below the drop target, with
// the folders of a dropped folder) and the empty folders among them.
// webkitGetAsEntry must be called during the drop event, so the entries are
// taken at once and read afterwards.
function droppedEntries(dt) {
  const items = [...(dt.items || [])].filter((i) => i.kind === 'file');
  const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
  const files = [...(dt.files || [])];
  return async () => {
    if (!entries.length || entries.some((e) => !e)) return { files: files.map((f) => ({ file: f, rel: f.name })), dirs: [] };
    const out = [], dirs = [];
    const read = (reader) => new Promise((res, rej) => reader.readEntries(res, rej));
    async function walk(entry, prefix) {
      if (entry.isFile) {
        out.push({ file: await new Promise((res, rej) => entry.file(res, rej)), rel: prefix + entry.name });
      } else if (entry.isDirectory) {
        const reader = entry.createReader();
        let any = false;
        for (let batch = await read(reader); batch.length; batch = await read(reader)) {
          any = true;
          for (const e of batch) await walk(e, `${prefix}${entry.name}/`);
        }
        if (!any) dirs.push(prefix + entry.name);
      }
    }
    for (const e of entries) await walk(e, '');
    return { files: out, dirs };
  };
}

// A one-field dialog; resolves with the trimmed text or null.
function ask({ title, label, value, testid, ok }) {
  return modal({
    title, testid,
    body: (dlg) => {
      const input = h('input', {
        class: 'fb-input', value, 'aria-label': label, 'data-testid': 'fb-input', spellcheck: 'false',
        onkeydown: (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); dlg.querySelector('[data-value="ok"]').click(); } },
      });
      setTimeout(() => {
        input.focus();
        // select the name without its extension, as file managers do
        const start = value.lastIndexOf('/') + 1, dot = value.lastIndexOf('.');
        input.setSelectionRange(start, dot > start ? dot : value.length);
      }, 0);
      return h('label', { class: 'field' }, h('span', null, label), input);
    },
    actions: [{ label: ok, value: 'ok', kind: 'primary', testid: `${testid}-ok` }],
    read: (_, dlg) => dlg.querySelector('input').value.trim(),
  });
}

// nb: the Notebook; active(): whether the browser is shown (no requests
// while it is not). Returns {el, refresh, stop}.
export function fileBrowser(nb, { active = () => true } = {}) {
  const id = nb.projectId;
  const openKey = `eddy.files.${id}.open`;
  let expanded;
  try { expanded = new Set(JSON.parse(localStorage.getItem(openKey) || '[]')); } catch { expanded = new Set(); }
  // the folders of the notebook shown start open
  for (let p = parentOf(nb.path); p; p = parentOf(p)) expanded.add(p);
  const saveOpen = () => { try { localStorage.setItem(openKey, JSON.stringify([...expanded].slice(0, 500))); } catch { /* full */ } };

  let tree = buildTree([]), loaded = false, target = '', menu = null, stopped = false;
  const list = treeLister(id);

  const treeEl = h('ul', { class: 'fb-tree', role: 'tree', 'aria-label': 'Project files', 'data-testid': 'file-tree' });
  const uploads = h('div', { class: 'fb-uploads', 'data-testid': 'uploads', 'aria-live': 'polite' });
  const targetEl = h('span', { class: 'fb-target muted', 'data-testid': 'fb-target' });
  const picker = h('input', {
    type: 'file', multiple: true, hidden: true, 'data-testid': 'upload-input', 'aria-label': 'Upload files',
    onchange: () => { const fs = [...picker.files]; picker.value = ''; upload(fs.map((f) => ({ file: f, rel: f.name })), [], target); },
  });
  const tb = (label, title, testid, fn) => h('button', { class: 'small', title, 'aria-label': title, 'data-testid': testid, onclick: () => run(fn) }, label);
  const toolbar = h('div', { class: 'fb-toolbar', role: 'toolbar', 'aria-label': 'Files' },
    tb('+ File', 'New file', 'fb-new-file', () => newEntry('file', target)),
    tb('+ Folder', 'New folder', 'fb-new-folder', () => newEntry('dir', target)),
    tb('⤒ Upload', 'Upload files (or drop them here)', 'fb-upload', () => picker.click()),
    targetEl);
  const el = h('div', { class: 'fb', 'data-testid': 'file-browser' }, toolbar, treeEl,
    h('p', { class: 'fb-hint muted' }, 'Drop files or folders here to upload.'), uploads, picker);

  // An action from a button or a menu: errors become a toast with the
  // server's message.
  async function run(fn) {
    try { await fn(); } catch (e) { toast(e.message || String(e), 'error'); }
  }

  function setTarget(path) {
    target = path;
    clear(targetEl, path ? [`in ${path}/ `, h('button', { class: 'link', title: 'Back to the top folder', onclick: () => { setTarget(''); render(); } }, '×')] : '');
  }

  // ---- drawing -----------------------------------------------------------------
  function render() {
    const rows = [];
    const walk = (node, depth) => {
      for (const c of sorted(node)) {
        if (rows.length >= MAX_ROWS) return;
        rows.push(row(c, depth));
        if (c.dir && expanded.has(c.path)) walk(c, depth + 1);
      }
    };
    walk(tree, 0);
    if (!rows.length) rows.push(h('li', { class: 'fb-empty muted' }, loaded ? 'No files yet.' : 'Loading…'));
    if (rows.length >= MAX_ROWS) rows.push(h('li', { class: 'fb-empty muted' }, `Only the first ${MAX_ROWS} entries are shown.`));
    treeEl.replaceChildren(...rows);
  }

  function row(node, depth) {
    const open = node.dir && expanded.has(node.path);
    const name = h('button', {
      class: 'fb-name', title: node.dir ? node.path : `${node.path} · ${bytes(node.size)} · ${when(node.modified_at)}`,
      onclick: () => (node.dir ? toggle(node.path) : openFile(node.path)),
    }, h('span', { class: 'fb-caret', 'aria-hidden': 'true' }, node.dir ? (open ? '▾' : '▸') : ''),
    icon(node), h('span', { class: 'fb-label' }, node.name));
    const more = h('button', {
      class: 'fb-more', title: 'Rename, download, delete…', 'aria-label': `Actions for ${node.path}`, 'aria-haspopup': 'menu', 'data-testid': 'item-menu',
      onclick: (ev) => { ev.stopPropagation(); showMenu(node, more); },
    }, '⋯');
    const li = h('li', {
      class: ['fb-item', node.dir ? 'dir' : 'file', node.path === nb.path ? 'current' : '', node.dir && node.path === target ? 'target' : ''].filter(Boolean).join(' '),
      role: 'treeitem', 'aria-level': String(depth + 1), 'aria-expanded': node.dir ? String(open) : null,
      'aria-current': node.path === nb.path ? 'page' : null,
      'data-path': node.path, 'data-type': node.dir ? 'directory' : 'file', style: { paddingLeft: `${0.2 + depth * 0.85}rem` },
    }, name, node.dir ? null : h('span', { class: 'fb-size muted' }, bytes(node.size)), more);
    if (node.dir) dropZone(li, () => node.path);
    return li;
  }

  function toggle(path) {
    if (expanded.has(path)) expanded.delete(path); else expanded.add(path);
    saveOpen();
    setTarget(expanded.has(path) ? path : parentOf(path));
    render();
  }

  function openFile(path) {
    if (path === nb.path) return;
    navigate(openUrl(id, path));
  }

  // ---- the list, live ------------------------------------------------------------
  async function refresh(force = false) {
    if (stopped || (!force && !active())) return;
    const items = await list();
    if (items === null && loaded) return;
    loaded = true;
    if (items) tree = buildTree(items);
    render();
  }

  // ---- the item menu ---------------------------------------------------------------
  function closeMenu() {
    if (!menu) return;
    menu.remove();
    document.removeEventListener('mousedown', onDocDown, true);
    document.removeEventListener('keydown', onMenuKey, true);
    menu = null;
  }
  function onDocDown(ev) { if (menu && !menu.contains(ev.target)) closeMenu(); }
  function onMenuKey(ev) {
    if (!menu) return;
    if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); closeMenu(); return; }
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      const btns = [...menu.querySelectorAll('button')], i = btns.indexOf(document.activeElement);
      btns[(i + (ev.key === 'ArrowDown' ? 1 : btns.length - 1)) % btns.length].focus();
      ev.preventDefault();
      ev.stopPropagation();
    }
  }
  function showMenu(node, anchor) {
    closeMenu();
    const item = (action, label, fn, kind) => h('button', { role: 'menuitem', class: kind || null, 'data-action': action, onclick: () => { closeMenu(); run(fn); } }, label);
    menu = h('div', { class: 'fb-menu', role: 'menu', 'aria-label': `Actions for ${node.path}`, 'data-testid': 'fb-menu' },
      node.dir ? null : item('open', 'Open', () => openFile(node.path)),
      item('rename', 'Rename or move…', () => rename(node)),
      node.dir ? null : item('download', 'Download', () => downloadFile(id, node.path)),
      node.dir ? [item('new-file', 'New file here…', () => newEntry('file', node.path)),
        item('new-folder', 'New folder here…', () => newEntry('dir', node.path)),
        item('upload', 'Upload here…', () => { setTarget(node.path); picker.click(); })] : null,
      item('delete', node.dir ? 'Delete folder…' : 'Delete…', () => remove(node), 'danger'));
    document.body.append(menu);
    const r = anchor.getBoundingClientRect();
    menu.style.top = `${Math.min(r.bottom + 2, window.innerHeight - menu.offsetHeight - 4)}px`;
    menu.style.left = `${Math.max(4, Math.min(r.left, window.innerWidth - menu.offsetWidth - 4))}px`;
    document.addEventListener('mousedown', onDocDown, true);
    document.addEventListener('keydown', onMenuKey, true);
    menu.querySelector('button').focus();
  }

  // ---- changes ------------------------------------------------------------------------
  async function newEntry(kind, folder) {
    const dir = kind === 'dir';
    const name = await ask({
      title: dir ? 'New folder' : 'New file', label: folder ? `Name (in ${folder}/)` : 'Name',
      value: dir ? 'new-folder' : 'untitled.py', testid: dir ? 'new-folder-dialog' : 'new-file-dialog', ok: 'Create',
    });
    if (!name) return;
    const path = folder ? `${folder}/${name}` : name;
    if (dir) {
      await api.post(dirUrl(id, path));
      expanded.add(path);
    } else {
      try {
        await api.put(filePath(id, path), /\.ipynb$/i.test(path) ? EMPTY_NOTEBOOK() : '', { headers: { 'If-None-Match': '*' } });
      } catch (e) {
        if (e instanceof ApiError && e.status === 412) throw new Error(`${path} exists already`);
        throw e;
      }
    }
    if (folder) expanded.add(folder);
    saveOpen();
    toast(`Created ${path}`);
    await refresh(true);
  }

  async function rename(node) {
    const to = await ask({ title: `Rename or move ${node.dir ? 'folder' : 'file'}`, label: 'New path (folders with /)', value: node.path, testid: 'rename-dialog', ok: 'Rename' });
    if (!to || to === node.path) return;
    const movesMe = inside(nb.path, node.path);
    if (movesMe && nb.save) await nb.save();   // nothing unsaved may land on the old path
    await api.patch(filePath(id, node.path), { path: to });
    for (const p of [...expanded]) if (inside(p, node.path)) { expanded.delete(p); expanded.add(to + p.slice(node.path.length)); }
    for (let p = parentOf(to); p; p = parentOf(p)) expanded.add(p);   // show it where it went
    saveOpen();
    if (movesMe) { navigate(openUrl(id, to + nb.path.slice(node.path.length)), { replace: true }); return; }
    toast(`Renamed to ${to}`);
    await refresh(true);
  }

  async function remove(node) {
    if (inside(nb.path, node.path)) throw new Error(`${nb.path} is open here: close it before deleting ${node.dir ? 'its folder' : 'it'}`);
    const n = node.dir ? countFiles(node) : 1;
    const ok = await modal({
      title: `Delete ${node.path}?`, testid: 'delete-dialog',
      message: node.dir
        ? `The folder and everything in it (${n} file${n === 1 ? '' : 's'}) will be deleted from the workspace. Saved versions keep what they hold.`
        : 'The file will be deleted from the workspace. Saved versions keep what they hold.',
      actions: [{ label: 'Delete', value: 'delete', kind: 'danger', testid: 'delete-confirm' }],
    });
    if (!ok) return;
    await (node.dir ? api.del(dirUrl(id, node.path)) : api.del(filePath(id, node.path)));
    expanded.delete(node.path);
    if (inside(target, node.path)) setTarget('');
    toast(`Deleted ${node.path}`);
    await refresh(true);
  }

  // ---- uploads ---------------------------------------------------------------------------
  // One upload at a time, in the order given; each row shows its progress,
  // then "done" (and goes), "skipped" or the server's message (and stays
  // until dismissed).
  const queue = [];
  let pumping = false;

  function upload(files, dirs, folder) {
    const at = (rel) => (folder ? `${folder}/${rel}` : rel);
    for (const { file, rel } of files) {
      const path = at(rel);
      const bar = h('progress', { max: String(file.size || 1), value: '0', 'aria-label': `Upload of ${path}` });
      const state = h('span', { class: 'fb-up-state' }, 'waiting');
      const rowEl = h('div', { class: 'fb-up', 'data-testid': 'upload-row', 'data-path': path, 'data-state': 'waiting' },
        h('span', { class: 'fb-up-name', title: path }, rel), bar, state);
      uploads.append(rowEl);
      queue.push({ file, path, bar, state, rowEl });
    }
    if (folder) { expanded.add(folder); saveOpen(); }
    for (const d of dirs) queue.push({ dir: at(d) });
    pump();
  }

  async function pump() {
    if (pumping) return;
    pumping = true;
    while (queue.length && !stopped) {
      const job = queue.shift();
      if (job.dir) {
        try { await api.post(dirUrl(id, job.dir)); } catch (e) { if (!(e instanceof ApiError && e.status === 409)) toast(e.message, 'error'); }
        continue;
      }
      await uploadOne(job);
      refresh(true).catch(() => {});
    }
    pumping = false;
  }

  async function uploadOne({ file, path, bar, state, rowEl }) {
    const set = (s, text) => { rowEl.dataset.state = s; state.textContent = text; state.title = text; };
    let events = 0;
    const onProgress = (loaded, total) => {
      events++;
      rowEl.dataset.progressEvents = String(events);
      bar.max = total || 1;
      bar.value = loaded;
      set('uploading', total ? `${Math.floor((100 * loaded) / total)}%` : bytes(loaded));
    };
    set('uploading', '0%');
    try {
      try {
        await uploadFile(id, path, file, { onProgress });
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 412)) throw e;
        set('asking', 'exists');
        const choice = await modal({
          title: `Replace ${path}?`, testid: 'replace-dialog',
          message: `${path} exists in the project. Replace it with the file you are uploading (${bytes(file.size)})?`,
          actions: [{ label: 'Replace', value: 'replace', kind: 'danger', testid: 'replace-confirm' }], cancelLabel: 'Keep the existing file',
        });
        if (!choice) { set('skipped', 'skipped: kept the existing file'); bar.value = 0; linger(rowEl); return; }
        await uploadFile(id, path, file, { onProgress, replace: true });
      }
      bar.value = bar.max;
      set('done', 'done');
      linger(rowEl);
    } catch (e) {
      const why = e instanceof ApiError
        ? ({ 402: 'the workspace is full', 413: 'too large', 422: 'not accepted' }[e.status] || `error ${e.status}`)
        : 'failed';
      set('error', `${why}: ${e.message}`);
      rowEl.classList.add('error');
      rowEl.append(h('button', { class: 'link', title: 'Dismiss', 'aria-label': `Dismiss the error for ${path}`, onclick: () => rowEl.remove() }, '×'));
      toast(`Upload of ${path}: ${e.message}`, 'error');
    }
  }

  function linger(rowEl) { setTimeout(() => rowEl.remove(), DONE_LINGER_MS); }

  // ---- drag and drop -------------------------------------------------------------------------
  const hasFiles = (ev) => ev.dataTransfer && [...(ev.dataTransfer.types || [])].includes('Files');
  function dropZone(zone, folderOf) {
    zone.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      ev.stopPropagation();
      ev.dataTransfer.dropEffect = 'copy';
      [el, ...el.querySelectorAll('.drop-here')].forEach((x) => x !== zone && x.classList.remove('drop-here'));
      zone.classList.add('drop-here');
    });
    zone.addEventListener('dragleave', (ev) => { if (!zone.contains(ev.relatedTarget)) zone.classList.remove('drop-here'); });
    zone.addEventListener('drop', (ev) => {
      if (!hasFiles(ev) && !(ev.dataTransfer && ev.dataTransfer.files && ev.dataTransfer.files.length)) return;
      ev.preventDefault();
      ev.stopPropagation();
      el.classList.remove('drop-here');
      el.querySelectorAll('.drop-here').forEach((x) => x.classList.remove('drop-here'));
      const read = droppedEntries(ev.dataTransfer), folder = folderOf();
      run(async () => { const { files, dirs } = await read(); upload(files, dirs, folder); });
    });
  }
  dropZone(el, () => '');

  render();
  refresh(true).catch((e) => { loaded = true; clear(treeEl, h('li', { class: 'fb-empty error-text' }, e.message)); });
  const stopPoll = visiblePoll(() => refresh(), { period: POLL_MS });
  return {
    el,
    refresh: () => refresh(true).catch(() => {}),
    stop() { stopped = true; stopPoll(); closeMenu(); },
  };
}
