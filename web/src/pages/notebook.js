// The notebook IDE: nbformat v4 cells edited with CodeMirror 6, Jupyter's
// command and edit modes and shortcuts, markdown rendered with math and
// sanitised, autosave to the working tree (PUT files), save version, and
// execution through the kernel client (kernel_client.js): a resource picker
// with prices, queue position and ETA, streaming outputs that replay from the
// kernel's journal, so a reload loses nothing. Saves are
// conditional (If-Match with the notebook's ETag); when another writer changed
// the file meanwhile (the kernel's output fold, code in the kernel, another
// tab) the page merges both (nbmerge.js) and saves again, and asks the user
// only when both changed the same cell's source.
import { EditorView, keymap, lineNumbers, drawSelection, highlightActiveLine } from '@codemirror/view';
import { EditorState } from '@codemirror/state';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching, indentUnit } from '@codemirror/language';
import { python } from '@codemirror/lang-python';
import { markdown } from '@codemirror/lang-markdown';
import { api, ApiError, readFile, writeFile, isStale } from '../api.js';
import { h, clear, busy, toast, coins, duration, staleDialog, workspaceUsage, modal } from '../ui.js';
import { mergeCells, baseOf } from '../nbmerge.js';
import { onLeave } from '../app.js';
import { renderMarkdown, sandboxedFrame } from '../markdown.js';
import { resourcePicker, kernelsDialog, isKernelLimit, plural } from '../widgets.js';
import { KernelClient } from '../kernel_client.js';
import { streamView, stripAnsi, nbText as src } from '../output.js';
// The panels around the cells, one module each; each gets the Notebook and
// registers its own teardown with onLeave.
import { codeIntel } from '../codeintel.js';
import { findBar } from '../findbar.js';
import { sidePanel } from '../sidepanel.js';
import { kernelMeters } from '../meters.js';
import { notebookMenu } from '../notebook_io.js';
import { terminalButton } from '../terminal_button.js';

const enc = encodeURIComponent;
const AUTOSAVE_MS = 1500;
const AUTOSAVE_MAX_MS = 5000;

const newId = () => crypto.randomUUID().replace(/-/g, '').slice(0, 12);

// Images pasted or dropped into a Markdown cell become its attachments;
// each is kept in the notebook file, so one is bounded.
const ATTACHMENT_MAX = 5 << 20;
const PASTABLE = /^image\/(png|jpeg|gif|webp|bmp|svg\+xml)$/i;

function imageFiles(list) {
  return [...(list || [])].filter((f) => f && PASTABLE.test(f.type));
}

// A Markdown editor's paste and drop handlers: image files are attached,
// anything else is CodeMirror's as usual.
function imagePaste(nb, cell) {
  return EditorView.domEventHandlers({
    paste(ev, view) {
      const files = imageFiles(ev.clipboardData && ev.clipboardData.files);
      if (!files.length) return false;
      ev.preventDefault();
      nb.attachImages(cell, view, files, null);
      return true;
    },
    drop(ev, view) {
      const files = imageFiles(ev.dataTransfer && ev.dataTransfer.files);
      if (!files.length) return false;
      ev.preventDefault();
      ev.stopPropagation();   // not an upload to the side panel's file browser
      nb.attachImages(cell, view, files, view.posAtCoords({ x: ev.clientX, y: ev.clientY }));
      return true;
    },
  });
}

function base64Of(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(r.error || new Error('read failed'));
    r.readAsDataURL(file);
  });
}

// The attachment's name: the file's (a clipboard image is "image.png"),
// made safe, and numbered when another image has it already.
function attachmentName(atts, fileName, mime, data) {
  const ext = { 'image/jpeg': 'jpg', 'image/svg+xml': 'svg' }[mime] || mime.split('/')[1];
  let base = String(fileName || '').replace(/[^\w.-]+/g, '_').replace(/^[._]+/, '').slice(0, 80) || `image.${ext}`;
  if (!/\.[A-Za-z0-9]+$/.test(base)) base += `.${ext}`;
  const dot = base.lastIndexOf('.');
  for (let i = 0, name = base; ; name = `${base.slice(0, dot)}-${++i}${base.slice(dot)}`) {
    const old = Object.prototype.hasOwnProperty.call(atts, name) ? atts[name] : null;
    if (!old || (old[mime] === data)) return name;
  }
}

export async function notebookPage(projectId, path) {
  const [project, { text, etag }] = await Promise.all([
    api.get(`/api/v1/projects/${enc(projectId)}`),
    readFile(projectId, path).then(async (r) => ({ text: await r.res.text(), etag: r.etag })),
  ]);
  // Only a caller who may change the project gets the editor (can_write,
  // from the server); anyone else who can read it (another user, a public
  // project) gets the read-only page with "Fork to run": no editor, no
  // kernel, nothing that would save.
  if (project.can_write !== true) {
    const { sharePage } = await import('./share.js');
    return sharePage(projectId, path, { project, text });
  }
  let nb;
  try { nb = JSON.parse(text); } catch { throw new Error(`${path} is not valid JSON`); }
  const nbv = new Notebook(projectId, path, project, nb, etag);
  await nbv.mount();
  return nbv.root;
}

class Notebook {
  constructor(projectId, path, project, nb, etag) {
    this.projectId = projectId;
    this.etag = etag;            // of the file as last loaded or saved (null: the server sends none)
    this.path = path;
    this.project = project;
    this.meta = nb.metadata || {};
    this.nbformatMinor = Math.max(4, nb.nbformat_minor || 4);
    this.cells = (nb.cells || []).map((c) => this.makeCell(c));
    if (!this.cells.length) this.cells.push(this.makeCell({ cell_type: 'code', source: '' }));
    this.base = baseOf(nb.cells);  // what the page and the server last agreed on, per cell
    this.ranHere = new Set();      // ids of cells run in this page
    this.sel = 0;
    this.mode = 'command';
    this.dirty = false;
    this.saving = null;
    this.lastKey = null;
    this.clipboard = null;
    // 'change' after the cells changed (an edit, an insert, a merge),
    // 'kernel' after the kernel's model changed (detail: the model or null).
    this.events = new EventTarget();
    this.kc = new KernelClient({
      projectId, notebookPath: path, storageKey: `eddy.nb.${projectId}.${path}`,
      resource: () => this.resource.value,
      hasCell: (id) => this.cells.some((c) => c.id === id),
      onKernel: (k) => this.showKernel(k),
      onReconnecting: () => { this.kernelBox.textContent = 'Kernel reconnecting…'; },
      onMessage: (id, msg, first) => this.onMessage(id, msg, first),
      onEnd: () => {
        for (const c of this.cells) {
          if (c.count === '*') { c.count = c.execCount ?? null; if (c.promptEl) c.promptEl.textContent = `[${c.count ?? ' '}]`; }
          this.finished(c, 'aborted');   // Run all stops: the kernel is gone
        }
      },
    });
  }

  makeCell(c) {
    const cell = {
      id: c.id || newId(), type: c.cell_type === 'markdown' ? 'markdown' : c.cell_type === 'raw' ? 'raw' : 'code',
      source: src(c.source), metadata: c.metadata || {}, outputs: c.outputs || [], count: c.execution_count ?? null,
      attachments: c.attachments, editing: false,
    };
    cell.el = h('div', { class: 'cell', tabindex: '-1', 'data-cell-id': cell.id });
    return cell;
  }

  // ---- layout ---------------------------------------------------------------
  async mount() {
    this.status = h('span', { class: 'save-status', 'aria-live': 'polite', 'data-testid': 'save-status' }, 'Saved');
    this.kernelBox = h('span', { class: 'kernel-status', 'data-testid': 'kernel-status' }, 'No kernel');
    this.quotaBox = h('span', { class: 'quota-live', 'data-testid': 'quota-live' });
    this.banner = h('div');
    this.modeBox = h('span', { class: 'mode', 'data-testid': 'mode' }, 'command');
    // Filled in when the resource list arrives; the page does not wait for it.
    this.resource = h('select', { 'aria-label': 'Resource for the kernel' }, h('option', { value: 'cpu-basic' }, 'cpu-basic'));
    resourcePicker('Resource for the kernel').then((sel) => {
      if (this.kc.kernel && this.kc.kernel.resource && [...sel.options].some((o) => o.value === this.kc.kernel.resource)) sel.value = this.kc.kernel.resource;
      sel.addEventListener('change', () => this.resourceChanged());
      this.resource.replaceWith(sel);
      this.resource = sel;
    }).catch(() => {});
    this.list = h('div', { class: 'cells', role: 'list', 'aria-label': 'Cells' });
    const b = (label, title, fn, testid) => {
      // The button never takes the focus from the cell or its editor, and
      // after the action the focus goes back where the mode says (issue 14).
      const el = h('button', { class: 'small', title, 'data-testid': testid, onmousedown: (ev) => ev.preventDefault(),
        onclick: () => { const p = busy(el, fn); this.refocus(); p.finally(() => this.refocus()); } }, label);
      return el;
    };
    this.typeSel = h('select', { 'aria-label': 'Cell type' }, h('option', { value: 'code' }, 'Code'), h('option', { value: 'markdown' }, 'Markdown'), h('option', { value: 'raw' }, 'Raw'));
    this.typeSel.addEventListener('change', () => this.setType(this.sel, this.typeSel.value));
    this.find = findBar(this);   // Ctrl/Cmd+F; its bar is the toolbar's last row
    const toolbar = h('div', { class: 'nb-toolbar', role: 'toolbar', 'aria-label': 'Notebook' },
      b('Save', 'Save now (S, Ctrl-S)', () => this.save(), 'save'),
      b('Save version', 'Commit the project', () => this.saveVersion(), 'save-version'),
      h('span', { class: 'sep' }),
      b('+ Cell', 'Insert below (B)', () => this.insert(this.sel + 1, 'code'), 'add-cell'),
      this.find.button,
      this.typeSel,
      h('span', { class: 'sep' }),
      b('▶ Run', 'Run the cell and select the next (Shift-Enter)', () => this.runAndAdvance(), 'run'),
      b('Run all', 'Run every code cell', () => this.runAll(), 'run-all'),
      b('■ Interrupt', 'Interrupt the kernel (I, I)', () => this.interrupt(), 'interrupt'),
      b('↻ Restart', 'Restart the kernel (0, 0)', () => this.restart(), 'restart'),
      b('Kernels', 'Running kernels: stop, restart, stop all', () => this.openKernels(), 'open-kernels'),
      terminalButton(this),
      notebookMenu(this),
      h('span', { class: 'sep' }),
      this.resource, this.kernelBox, kernelMeters(this),
      h('span', { class: 'spacer' }), this.quotaBox, this.modeBox, this.status, this.find.el);
    this.root = h('div', { class: 'page notebook' },
      h('div', { class: 'page-head' }, h('h1', null, h('a', { href: `/projects/${enc(this.projectId)}` }, this.project.name), ' / ', this.path),
        h('span', { class: 'muted small-text' }, 'Enter: edit · Esc: command · Shift-Enter: run · A/B: insert · DD: delete · M/Y: markdown/code · Z: undo delete · Tab: complete · Shift-Tab: docs · Ctrl-F: find')),
      toolbar, this.banner, h('div', { class: 'nb-body' }, sidePanel(this), this.list));
    this.renderAll();
    this.select(0);
    this.keyHandler = (ev) => this.onKey(ev);
    document.addEventListener('keydown', this.keyHandler);
    const beforeUnload = (ev) => { if (this.dirty) { this.save(); ev.preventDefault(); } };
    window.addEventListener('beforeunload', beforeUnload);
    this.quotaTimer = setInterval(() => this.loadQuota(), 10000);
    onLeave(() => {
      this.kc.close();
      document.removeEventListener('keydown', this.keyHandler);
      window.removeEventListener('beforeunload', beforeUnload);
      clearInterval(this.quotaTimer);
      clearTimeout(this.autosaveTimer);
      if (this.dirty) this.save();
    });
    this.loadQuota();
    this.kc.attach();
  }

  renderAll() {
    clear(this.list, this.cells.map((c) => c.el));
    this.cells.forEach((c) => this.renderCell(c));
  }

  renderCell(cell) {
    const idx = () => this.cells.indexOf(cell);
    const prompt = h('div', { class: 'prompt' }, cell.type === 'code' ? `[${cell.count === '*' ? '*' : cell.count ?? ' '}]` : '');
    const body = h('div', { class: 'cell-body' });
    if (cell.editor) { cell.editor.destroy(); cell.editor = null; }
    cell.outEl = h('div', { class: 'outputs', 'data-testid': 'outputs', 'aria-live': 'polite' });
    cell.promptEl = prompt;
    if (cell.type === 'markdown' && !cell.editing) {
      cell.editor = null;
      const md = h('div', { class: 'markdown', 'data-testid': 'markdown' });
      renderMarkdown(md, cell.source || '*Empty markdown cell: press Enter to edit*', { attachments: cell.attachments });
      md.addEventListener('dblclick', () => this.edit(idx()));
      body.append(md);
    } else {
      cell.editor = this.makeEditor(cell);
      body.append(cell.editor.dom);
      if (cell.type === 'code') body.append(cell.outEl);
    }
    clear(cell.el, prompt, body);
    cell.el.className = `cell ${cell.type}`;
    cell.el.setAttribute('role', 'listitem');
    cell.el.setAttribute('data-type', cell.type);
    // A click in the editor edits; anywhere else in the cell (its prompt,
    // its outputs) selects it in command mode, as Jupyter does.
    cell.el.onclick = (ev) => {
      const i = idx(), inEditor = !!ev.target.closest('.cm-editor');
      if (inEditor) { if (i !== this.sel) this.select(i, { keepMode: true }); this.setMode('edit'); return; }
      if (ev.target.closest('a, button, input, select, textarea, iframe')) return;
      this.select(i);
    };
    if (cell.type === 'code') this.renderOutputs(cell);
    if (this.cells[this.sel] === cell) cell.el.classList.add('selected');
  }

  makeEditor(cell) {
    const self = this;
    const keys = keymap.of([
      { key: 'Shift-Enter', run: () => { self.runAndAdvance(); return true; } },
      { key: 'Mod-Enter', run: () => { self.runCell(cell); return true; } },
      { key: 'Alt-Enter', run: () => { self.runCell(cell); self.insert(self.cells.indexOf(cell) + 1, 'code', true); return true; } },
      { key: 'Escape', run: () => { self.setMode('command'); return true; } },
      { key: 'Mod-s', run: () => { self.save(); return true; } },
    ]);
    const view = new EditorView({
      parent: undefined,
      state: EditorState.create({
        doc: cell.source,
        extensions: [keys, lineNumbers(), history(), drawSelection(), indentOnInput(), bracketMatching(), highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }), keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          cell.type === 'code' ? python() : cell.type === 'markdown' ? [markdown(), imagePaste(self, cell)] : [],
          codeIntel(self, cell),
          indentUnit.of('    '), EditorState.tabSize.of(4),
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ 'aria-label': `${cell.type} cell` }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) { cell.source = u.state.doc.toString(); if (!self.adopting) self.touch(); }
            if (u.focusChanged && u.view.hasFocus) { const i = self.cells.indexOf(cell); if (i !== self.sel) self.select(i, { keepMode: true }); self.setMode('edit'); }
          })],
      }),
    });
    return view;
  }

  // ---- selection and modes ----------------------------------------------------
  select(i, { keepMode = false, scroll = true } = {}) {
    i = Math.max(0, Math.min(this.cells.length - 1, i));
    this.cells.forEach((c, j) => c.el.classList.toggle('selected', j === i));
    this.sel = i;
    const cell = this.cells[i];
    this.typeSel.value = cell.type;
    if (!keepMode) this.setMode('command');
    if (scroll) cell.el.scrollIntoView({ block: 'nearest' });
  }

  setMode(mode) {
    this.mode = mode;
    this.modeBox.textContent = mode;
    this.root && this.root.classList.toggle('edit-mode', mode === 'edit');
    const cell = this.cells[this.sel];
    if (mode === 'command') {
      if (cell.type === 'markdown' && cell.editing) { cell.editing = false; this.pruneAttachments(cell); this.renderCell(cell); }
      cell.el.focus({ preventScroll: true });
    }
  }

  // Put the keyboard focus where the mode says: the selected cell's editor
  // in edit mode, the cell itself in command mode (after a toolbar button,
  // a dialog or a toast took it).
  refocus() {
    const a = document.activeElement;
    if (a && a !== document.body && !this.root.contains(a)) return;   // a dialog or another control has it
    if (a && a.closest && a.closest('.nb-toolbar select')) return;
    const cell = this.cells[this.sel];
    if (!cell) return;
    if (this.mode === 'edit' && cell.editor) { if (!cell.editor.hasFocus) cell.editor.focus(); }
    else if (a !== cell.el) cell.el.focus({ preventScroll: true });
  }

  edit(i) {
    this.select(i, { keepMode: true });
    const cell = this.cells[this.sel];
    if (cell.type === 'markdown' && !cell.editing) { cell.editing = true; this.renderCell(cell); }
    this.setMode('edit');
    cell.editor && cell.editor.focus();
  }

  // Command-mode shortcuts (Jupyter's); edit mode goes to CodeMirror.
  onKey(ev) {
    if (this.mode === 'edit' || ev.defaultPrevented) return;
    const t = ev.target;
    if (t && (t.closest?.('.cm-editor') || ['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON'].includes(t.tagName))) return;
    const k = ev.key, prev = this.lastKey;
    this.lastKey = k;
    const done = () => ev.preventDefault();
    if (k === 'Enter' && ev.shiftKey) { done(); this.runAndAdvance(); return; }
    if (k === 'Enter' && (ev.ctrlKey || ev.metaKey)) { done(); this.runCell(this.cells[this.sel]); return; }
    if (k === 'Enter' && ev.altKey) { done(); this.runCell(this.cells[this.sel]); this.insert(this.sel + 1, 'code', true); return; }
    if ((ev.ctrlKey || ev.metaKey) && k === 's') { done(); this.save(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    switch (k) {
      case 'Enter': done(); this.edit(this.sel); break;
      case 'ArrowDown': case 'j': done(); this.select(this.sel + 1); break;
      case 'ArrowUp': case 'k': done(); this.select(this.sel - 1); break;
      case 'a': done(); this.insert(this.sel, 'code'); break;
      case 'b': done(); this.insert(this.sel + 1, 'code'); break;
      case 'd': if (prev === 'd') { done(); this.lastKey = null; this.remove(this.sel); } break;
      case 'i': if (prev === 'i') { done(); this.lastKey = null; this.interrupt(); } break;
      case '0': if (prev === '0') { done(); this.lastKey = null; this.restart(); } break;
      case 'm': done(); this.setType(this.sel, 'markdown'); break;
      case 'y': done(); this.setType(this.sel, 'code'); break;
      case 'r': done(); this.setType(this.sel, 'raw'); break;
      case 'z': done(); this.undoDelete(); break;
      case 'c': done(); this.clipboard = this.snapshot(this.cells[this.sel]); toast('Cell copied'); break;
      case 'x': done(); this.clipboard = this.snapshot(this.cells[this.sel]); this.remove(this.sel); break;
      case 'v': if (this.clipboard) { done(); this.insertCell(this.sel + 1, { ...this.clipboard, id: newId() }); } break;
      case 's': done(); this.save(); break;
      default: break;
    }
  }

  // ---- structure --------------------------------------------------------------
  snapshot(c) {
    return { cell_type: c.type, id: c.id, metadata: c.metadata, source: c.source, ...(c.type === 'code' ? { outputs: c.outputs, execution_count: c.count === '*' ? null : c.count } : {}),
      ...(c.type !== 'code' && c.attachments ? { attachments: c.attachments } : {}) };
  }

  insertCell(i, json, edit = false) {
    const cell = this.makeCell(json);
    this.cells.splice(i, 0, cell);
    if (i + 1 < this.cells.length) this.list.insertBefore(cell.el, this.cells[i + 1].el);
    else this.list.append(cell.el);
    this.renderCell(cell);
    this.touch();
    if (edit) this.edit(i); else this.select(i);
    return cell;
  }

  insert(i, type, edit = false) { return this.insertCell(i, { cell_type: type, source: '' }, edit); }

  remove(i) {
    const [cell] = this.cells.splice(i, 1);
    this.deleted = { cell: this.snapshot(cell), at: i };
    cell.el.remove();
    if (!this.cells.length) this.insert(0, 'code');
    this.touch();
    this.select(Math.min(i, this.cells.length - 1));
  }

  undoDelete() {
    if (!this.deleted) return;
    const { cell, at } = this.deleted;
    this.deleted = null;
    this.insertCell(Math.min(at, this.cells.length), cell);
  }

  setType(i, type) {
    const cell = this.cells[i];
    if (cell.type === type) return;
    cell.type = type;
    cell.editing = false;
    if (type !== 'code') { cell.outputs = []; cell.count = null; }
    this.renderCell(cell);
    this.touch();
    this.select(i);
  }

  // ---- attachments (images pasted or dropped into a Markdown cell) ------------------
  // Store images as the cell's nbformat attachments and reference them as
  // ![name](attachment:name) at `pos`, as JupyterLab does.
  async attachImages(cell, view, files, pos) {
    const added = [];
    for (const f of files) {
      if (f.size > ATTACHMENT_MAX) { toast(`${f.name || 'The image'} is over ${ATTACHMENT_MAX >> 20} MiB: not attached`, 'error'); continue; }
      const mime = f.type.toLowerCase();
      let data;
      try { data = mime === 'image/svg+xml' ? await f.text() : await base64Of(f); }
      catch (e) { toast(`Could not read ${f.name || 'the image'}: ${e.message}`, 'error'); continue; }
      const atts = { ...(cell.attachments || {}) };
      const name = attachmentName(atts, f.name, mime, data);
      atts[name] = { [mime]: data };
      cell.attachments = atts;
      added.push(`![${name}](attachment:${encodeURI(name)})`);
    }
    if (!added.length || view !== cell.editor) return;
    const sel = view.state.selection.main, end = view.state.doc.length;
    const from = Math.min(pos ?? sel.from, end), to = Math.min(pos ?? sel.to, end);
    const insert = added.join('\n');
    view.dispatch({ changes: { from, to, insert }, selection: { anchor: from + insert.length } });
    view.focus();
  }

  // Attachments no longer referenced from the source go, when the cell is
  // rendered (Jupyter drops them when it saves).
  pruneAttachments(cell) {
    if (!cell.attachments || typeof cell.attachments !== 'object') return;
    const keep = Object.keys(cell.attachments).filter((n) => cell.source.includes(`attachment:${n}`) || cell.source.includes(`attachment:${encodeURI(n)}`));
    if (keep.length === Object.keys(cell.attachments).length) return;
    cell.attachments = keep.length ? Object.fromEntries(keep.map((n) => [n, cell.attachments[n]])) : undefined;
    this.touch();
  }

  // ---- saving -------------------------------------------------------------------
  toJSON() {
    return {
      nbformat: 4, nbformat_minor: this.nbformatMinor, metadata: this.meta,
      cells: this.cells.map((c) => {
        const o = { cell_type: c.type, id: c.id, metadata: c.metadata, source: c.source };
        if (c.type === 'code') { o.outputs = c.outputs; o.execution_count = typeof c.count === 'number' ? c.count : null; }
        if (c.attachments && c.type !== 'code') o.attachments = c.attachments;
        return o;
      }),
    };
  }

  // Autosave AUTOSAVE_MS after the last change, and at the latest
  // AUTOSAVE_MAX_MS after the first unsaved one (a cell that streams output
  // changes the notebook all the time).
  touch() {
    this.events.dispatchEvent(new Event('change'));
    if (!this.dirty) this.dirtySince = Date.now();
    this.dirty = true;
    this.status.textContent = 'Unsaved changes';
    clearTimeout(this.autosaveTimer);
    const wait = Math.max(0, Math.min(AUTOSAVE_MS, this.dirtySince + AUTOSAVE_MAX_MS - Date.now()));
    this.autosaveTimer = setTimeout(() => this.save().catch(() => {}), wait);
  }

  // One save at a time; edits made meanwhile are saved by the next one.
  async save() {
    clearTimeout(this.autosaveTimer);
    if (this.saving) { await this.saving.catch(() => {}); if (!this.dirty) return; }
    this.saving = this.saveNow();
    try { await this.saving; } finally { this.saving = null; }
  }

  async saveNow() {
    this.dirty = false;
    this.status.textContent = 'Saving…';
    let nb = this.toJSON(), force = false;
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          const r = await writeFile(this.projectId, this.path, JSON.stringify(nb, null, 1), { etag: force ? null : this.etag });
          this.etag = r.etag;
          this.base = baseOf(nb.cells);
          this.status.textContent = this.dirty ? 'Unsaved changes' : `Saved ${new Date().toLocaleTimeString()}`;
          return;
        } catch (e) {
          if (!isStale(e)) throw e;
          // Someone else wrote the notebook since: merge, or ask.
          if (attempt >= 8) throw new Error('the notebook keeps changing on the server; will retry');
          const next = await this.mergeWithServer();
          if (next === null) { this.dirty = true; this.status.textContent = 'Not saved: changed elsewhere'; return; }
          if (next.done) { this.status.textContent = 'Reloaded: your changes were discarded'; return; }
          nb = next.nb;
          force = next.force;
        }
      }
    } catch (e) {
      this.dirty = true;
      this.status.textContent = 'Not saved';
      toast(`Autosave failed: ${e.message}`, 'error');
      throw e;
    }
  }

  // After a 412: read the notebook as it is now and merge it with the page's
  // (see nbmerge.js). Returns {nb, force} to save (force: without If-Match,
  // the user chose to overwrite), or null when the user cancelled.
  async mergeWithServer() {
    let r;
    try { r = await readFile(this.projectId, this.path); }
    catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
      return this.askConflict(this.toJSON(), null, null, [], 'It was deleted elsewhere.');
    }
    const text = await r.res.text();
    let server;
    try { server = JSON.parse(text); } catch { server = null; }
    const local = this.toJSON();
    if (!server || !Array.isArray(server.cells)) {
      // Not a notebook any more (written by other code): only the user can say.
      return this.askConflict(local, null, r.etag, [], 'It is no longer a notebook the page can merge with.');
    }
    if (server.cells.some((c) => !c || !c.id)) {
      // Cells are matched by id; without ids nothing can be merged safely.
      return this.askConflict(local, server, r.etag, [], 'Its cells have no ids, so the changes cannot be merged cell by cell.');
    }
    const running = new Set(this.cells.filter((c) => c.count === '*').map((c) => c.id));
    const m = mergeCells(local.cells, server.cells, this.base, { ranHere: this.ranHere, running });
    if (m.conflicts.length) return this.askConflict(local, server, r.etag, m.conflicts);
    this.etag = r.etag;
    this.base = baseOf(server.cells);
    this.adopt(m.cells);
    if (m.inserted.length) toast(`${m.inserted.length} cell(s) added elsewhere were merged in`);
    return { nb: { ...local, cells: m.cells }, force: false };
  }

  async askConflict(local, server, etag, cells = [], why = '') {
    const choice = await staleDialog(this.path, cells.length
      ? `The same cell${cells.length > 1 ? 's were' : ' was'} edited here and elsewhere, so the changes cannot be merged.`
      : why);
    if (choice === 'overwrite') {
      this.etag = etag;
      return { nb: this.toJSON(), force: !etag };
    }
    if (choice === 'reload' && server) {
      this.etag = etag;
      this.base = baseOf(server.cells);
      this.meta = server.metadata || this.meta;
      this.adopt(server.cells, { outputsToo: true });
      this.dirty = false;
      return { done: true };   // nothing of the page's is left to save
    }
    if (choice === 'reload') { location.reload(); return null; }
    return null;
  }

  // Make the page show `cells` (nbformat), reusing the cell objects (and
  // editors) of ids it already has so kernel messages still find them. The
  // outputs of a cell running here stay the page's own (the kernel's event
  // stream completes them) unless outputsToo.
  adopt(cells, { outputsToo = false } = {}) {
    const byId = new Map(this.cells.map((c) => [c.id, c]));
    const selected = this.cells[this.sel];
    const next = cells.map((j) => {
      let c = byId.get(j.id);
      if (!c) { c = this.makeCell(j); this.renderCell(c); return c; }
      byId.delete(j.id);
      const type = j.cell_type === 'markdown' ? 'markdown' : j.cell_type === 'raw' ? 'raw' : 'code';
      const source = src(j.source);
      c.metadata = j.metadata || {};
      if (j.attachments) c.attachments = j.attachments;
      let rerender = false;
      if (type !== c.type) { c.type = type; c.editing = false; c.source = source; rerender = true; }
      else if (source !== c.source) {
        c.source = source;
        if (c.editor) {
          this.adopting = true;
          try { c.editor.dispatch({ changes: { from: 0, to: c.editor.state.doc.length, insert: source } }); } finally { this.adopting = false; }
        } else rerender = true;
      }
      if (type === 'code' && (c.count !== '*' || outputsToo)) {
        const outs = j.outputs || [];
        const count = j.execution_count ?? null;
        if (JSON.stringify(outs) !== JSON.stringify(c.outputs) || count !== c.count) {
          c.outputs = outs;
          c.count = count;
          if (!rerender) { this.renderOutputs(c); if (c.promptEl) c.promptEl.textContent = `[${c.count ?? ' '}]`; }
        }
      } else if (type !== 'code') { c.outputs = []; c.count = null; }
      if (rerender) this.renderCell(c);
      return c;
    });
    for (const gone of byId.values()) gone.el.remove();
    // Put the elements in order, moving only those out of place.
    next.forEach((c, i) => { if (this.list.children[i] !== c.el) this.list.insertBefore(c.el, this.list.children[i] || null); });
    this.cells = next;
    if (!this.cells.length) { this.insert(0, 'code'); return; }
    const i = this.cells.indexOf(selected);
    this.sel = i >= 0 ? i : Math.min(this.sel, this.cells.length - 1);
    this.cells.forEach((c, j) => c.el.classList.toggle('selected', j === this.sel));
    this.events.dispatchEvent(new Event('change'));
  }

  async saveVersion() {
    await this.save();
    const msg = prompt('Describe this version', `Update ${this.path}`);
    if (msg === null) return;
    const v = await api.post(`/api/v1/projects/${enc(this.projectId)}/versions`, { message: msg || `Update ${this.path}` });
    toast(`Saved version ${String(v.id).slice(0, 10)}`);
  }

  // ---- quota ------------------------------------------------------------------------
  async loadQuota() {
    try {
      const q = await api.get('/api/v1/quota');
      const ws = workspaceUsage(q.workspace, this.projectId);
      this.quotaBox.textContent = `${coins(q.balance_mcoins)} · free GPU time ${duration(q.free_ms_left_today)}${typeof q.ms_remaining === 'number' && q.ms_remaining >= 0 ? ` · ${duration(q.ms_remaining)} of paid time left` : ''}${ws ? ` · workspace ${ws.text}` : ''}`;
    } catch { /* keep the last value */ }
  }

  // ---- kernels (kernel_client.js does the talking) ------------------------------------
  showKernel(k) {
    this.events.dispatchEvent(new CustomEvent('kernel', { detail: k || null }));
    if (!k) { this.kernelBox.textContent = 'No kernel'; delete this.kernelBox.dataset.status; return; }
    if (!['queued', 'starting', 'restarting'].includes(k.status)) this.restarting = false;
    // A restart, or a start with nothing ahead, is "restarting"/"starting",
    // never "queued · position 0".
    let status = k.status;
    if (this.restarting && (status === 'queued' || status === 'starting')) status = 'restarting';
    else if (status === 'queued' && !(k.queue_position > 0)) status = 'starting';
    let s = `Kernel ${status}`;
    if (status === 'queued') s += ` · position ${k.queue_position}${k.eta_s >= 0 ? ` · ETA ${duration(k.eta_s * 1000)}` : ''}`;
    if (k.resource && this.resource && this.resource.value !== k.resource && !this.resourceAsked && [...this.resource.options].some((o) => o.value === k.resource)) this.resource.value = k.resource;
    if (k.status === 'dead' && k.stop_reason) s += ` (${k.stop_reason})`;
    this.kernelBox.textContent = s;
    this.kernelBox.dataset.status = k.status;
  }

  // A kernel message for a cell, folded into its nbformat outputs.
  onMessage(cellId, msg, first) {
    const cell = this.cells.find((c) => c.id === cellId);
    if (!cell) return;
    const type = msg.msg_type || msg.header?.msg_type;
    const content = msg.content || {};
    if (first) {
      // First message of this execution in this page load: the journal
      // replays the whole execution, so start its outputs afresh; it runs
      // ([*]) until its reply says otherwise.
      this.ranHere.add(cell.id);
      cell.outputs = [];
      cell.showAll = false;
      if (type !== 'execute_reply') cell.count = '*';
    }
    // While a cell runs its prompt stays [*] (as Jupyter's); the number it
    // ran as shows once its reply arrives.
    switch (type) {
      case 'execute_input': if (cell.count === '*') cell.execCount = content.execution_count ?? null; else cell.count = content.execution_count ?? cell.count; break;
      case 'stream': {
        const last = cell.outputs[cell.outputs.length - 1];
        if (last && last.output_type === 'stream' && last.name === content.name) last.text = src(last.text) + content.text;
        else cell.outputs.push({ output_type: 'stream', name: content.name, text: content.text });
        break;
      }
      case 'execute_result': cell.outputs.push({ output_type: 'execute_result', data: content.data, metadata: content.metadata || {}, execution_count: content.execution_count }); if (cell.count === '*') cell.execCount = content.execution_count ?? cell.execCount; else cell.count = content.execution_count ?? cell.count; break;
      case 'display_data': cell.outputs.push({ output_type: 'display_data', data: content.data, metadata: content.metadata || {} }); break;
      case 'error': cell.outputs.push({ output_type: 'error', ename: content.ename, evalue: content.evalue, traceback: content.traceback || [] }); break;
      case 'clear_output': cell.outputs = []; break;
      case 'input_request': this.askInput(cell, msg); return;
      case 'execute_reply':
        if (cell.count === '*') cell.count = content.execution_count ?? cell.execCount ?? null;
        this.finished(cell, content.status || 'ok');
        break;
      case 'status':
        if (content.execution_state !== 'idle') return;
        if (cell.count === '*') cell.count = cell.execCount ?? null;
        this.finished(cell, cell.outputs.some((o) => o.output_type === 'error') ? 'error' : 'ok');
        break;
      default: return;
    }
    cell.promptEl.textContent = `[${cell.count ?? ' '}]`;
    this.scheduleRender(cell);
    this.touch();
  }

  // Kernel messages come faster than frames: their outputs are drawn once
  // per animation frame, for every cell that changed meanwhile.
  scheduleRender(cell) {
    (this.renderQueue ||= new Set()).add(cell);
    if (this.renderFrame) return;
    this.renderFrame = requestAnimationFrame(() => {
      this.renderFrame = 0;
      const cells = [...this.renderQueue];
      this.renderQueue.clear();
      for (const c of cells) this.renderOutputs(c);
    });
  }

  // A cell's outputs as DOM, incrementally: an output already shown keeps its
  // node (a stream output that grew appends only its new text, see
  // output.js); the outputs after the first changed one are built anew. An
  // open input() box stays last.
  renderOutputs(cell) {
    const el = cell.outEl;
    if (!el) return;
    const shown = el.shownOutputs || [];
    const outs = cell.outputs;
    let i = 0;
    for (; i < shown.length && i < outs.length && shown[i].output === outs[i]; i++) shown[i].update?.();
    if (i === shown.length && i === outs.length) return;
    for (const v of shown.slice(i)) v.el.remove();
    const asking = el.querySelector('.stdin-row');
    const opts = { expanded: !!cell.showAll, onExpand: () => { cell.showAll = true; } };
    const fresh = outs.slice(i).map((o) => (o.output_type === 'stream' ? streamView(o, opts) : { el: renderOutput(o), output: o }));
    for (const v of fresh) el.insertBefore(v.el, asking);
    el.shownOutputs = shown.slice(0, i).concat(fresh);
  }

  async runCell(cell) {
    if (cell.type === 'markdown') { cell.editing = false; this.pruneAttachments(cell); this.renderCell(cell); return; }
    if (cell.type !== 'code' || !cell.source.trim()) return;
    const code = cell.source;
    this.ranHere.add(cell.id);
    cell.outputs = [];
    cell.showAll = false;
    cell.count = '*';
    cell.execCount = null;
    // Resolves with 'ok', 'error' or 'aborted' when this execution ends
    // (Run all waits for it and stops at an error).
    this.finished(cell, 'aborted');
    cell.done = new Promise((res) => { cell.finish = res; });
    cell.promptEl.textContent = '[*]';
    this.renderOutputs(cell);
    // Cells run while the kernel starts go out in the order they were run.
    // The server checks the cell against the working-tree notebook (and
    // folds the outputs into it), so a new or changed cell is saved first.
    try {
      const beforeSend = async () => { if (this.dirty || this.saving) await this.save(); };
      // A cell that reads stdin (input(), getpass()) runs with allow_stdin.
      if (/\b(input|getpass)\s*\(/.test(code)) await this.kc.executeWithStdin(cell.id, code, { beforeSend });
      else await this.kc.execute(cell.id, code, { beforeSend });
    } catch (e) {
      cell.count = null;
      cell.promptEl.textContent = '[ ]';
      this.finished(cell, 'aborted');
      if (isKernelLimit(e)) this.offerKernels(e.message);
      else toast(e.message, 'error');
    }
    return cell.done;
  }

  // The kernel asks for a line (input()): a text box under the cell; Enter
  // sends it (input_reply) and the prompt and answer stay as output text.
  askInput(cell, msg) {
    const id = msg.header?.msg_id;
    if (!cell.outEl || (id && cell.outEl.querySelector(`[data-input-for="${id}"]`))) return;
    const c = msg.content || {};
    const box = h('input', { type: c.password ? 'password' : 'text', class: 'stdin', 'data-testid': 'stdin', 'aria-label': c.prompt || 'Input' });
    const row = h('div', { class: 'out stdin-row', 'data-input-for': id || '' }, h('span', null, c.prompt || ''), box);
    box.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter') return;
      ev.preventDefault();
      ev.stopPropagation();
      try { this.kc.inputReply(msg, box.value); } catch (e) { toast(e.message, 'error'); return; }
      cell.outputs.push({ output_type: 'stream', name: 'stdout', text: `${c.prompt || ''}${c.password ? '' : box.value}\n` });
      row.remove();
      this.renderOutputs(cell);
      this.touch();
      this.refocus();
    });
    cell.outEl.append(row);
    box.focus();
  }

  finished(cell, status) {
    const f = cell.finish;
    cell.finish = null;
    if (f) f(status);
  }

  // The tier's kernel limit refused a start: offer the running kernels.
  async offerKernels(message) {
    const v = await modal({ title: 'No kernel could start', testid: 'kernel-limit-dialog', message: `${message}.`,
      actions: [{ label: 'Show running kernels', value: 'open', kind: 'primary', testid: 'kernel-limit-open' }] });
    if (v === 'open') await this.openKernels();
    this.refocus();
  }

  async openKernels() {
    await kernelsDialog();
    this.refocus();
  }

  // The resource class changed: a running kernel keeps its class, so ask to
  // restart it on the new one (stop, then start), or put the picker back.
  async resourceChanged() {
    const k = this.kc.kernel;
    const want = this.resource.value;
    if (!k || k.status === 'dead' || !k.resource || k.resource === want) return;
    this.resourceAsked = true;
    try { await this.askResource(k, want); } finally { this.resourceAsked = false; }
  }

  async askResource(k, want) {
    const v = await modal({ title: 'Change the kernel\'s resource?', testid: 'resource-change-dialog',
      message: `The kernel runs on ${k.resource}. Switching to ${want} stops it (its variables are lost) and starts a new kernel on ${want}.`,
      actions: [{ label: `Restart on ${want}`, value: 'switch', kind: 'primary', testid: 'resource-switch' }] });
    if (v !== 'switch') { this.resource.value = k.resource; toast(`The kernel stays on ${k.resource}`); this.refocus(); return; }
    try {
      await this.kc.switchResource();
      toast(`Kernel started on ${want}`);
    } catch (e) {
      if (isKernelLimit(e)) this.offerKernels(e.message); else toast(e.message, 'error');
    }
    this.refocus();
  }

  async runAndAdvance() {
    const cell = this.cells[this.sel];
    const run = this.runCell(cell);
    if (this.sel === this.cells.length - 1) this.insert(this.cells.length, 'code', true);
    else this.select(this.sel + 1);
    await run;
  }

  // Run every code cell in order, each after the one before ended; stop at
  // the first that raised (as Jupyter does) and select it.
  async runAll() {
    for (const c of this.cells) {
      if (c.type !== 'code' || !c.source.trim()) continue;
      const status = await this.runCell(c);
      if (status !== 'ok') {
        const i = this.cells.indexOf(c);
        if (i >= 0) this.select(i, { keepMode: this.mode === 'edit' });
        if (status === 'error') toast('Run all stopped at a cell that raised an error', 'error');
        return;
      }
    }
  }

  async interrupt() {
    if (await this.kc.interrupt()) toast('Interrupt sent');
  }

  async restart() {
    if (!this.kc.kernel) return;
    if (!confirm('Restart the kernel? Its variables are lost.')) return;
    this.restarting = true;
    try { if (await this.kc.restart()) toast('Kernel restarted'); }
    catch (e) { this.restarting = false; this.showKernel(this.kc.kernel); throw e; }
  }
}

// One nbformat output as DOM. Images come as data: URLs (allowed by the CSP);
// HTML goes into a sandboxed iframe without same-origin.
export function renderOutput(o) {
  switch (o.output_type) {
    case 'stream':
      return streamView(o).el;   // a long one shows its tail (output.js)
    case 'error':
      return h('pre', { class: 'out error', role: 'alert' }, stripAnsi((o.traceback || []).join('\n')) || `${o.ename}: ${o.evalue}`);
    case 'execute_result':
    case 'display_data': {
      const d = o.data || {};
      if (d['image/png']) return h('img', { class: 'out image', alt: 'plot output', src: `data:image/png;base64,${src(d['image/png']).replace(/\s/g, '')}` });
      if (d['image/jpeg']) return h('img', { class: 'out image', alt: 'image output', src: `data:image/jpeg;base64,${src(d['image/jpeg']).replace(/\s/g, '')}` });
      if (d['image/svg+xml']) return h('img', { class: 'out image', alt: 'SVG output', src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(src(d['image/svg+xml']))}` });
      if (d['text/html']) return h('div', { class: 'out html' }, sandboxedFrame(src(d['text/html']), 'HTML output'));
      if (d['text/markdown']) { const el = h('div', { class: 'out markdown' }); renderMarkdown(el, src(d['text/markdown'])); return el; }
      if (d['text/plain'] !== undefined) return h('pre', { class: 'out result' }, stripAnsi(src(d['text/plain'])));
      return h('pre', { class: 'out result muted' }, `[${Object.keys(d).join(', ')}]`);
    }
    default:
      return h('pre', { class: 'out muted' }, JSON.stringify(o));
  }
}
