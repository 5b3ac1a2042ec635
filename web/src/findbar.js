// Find and replace across every cell of the notebook (issue 14), like
// JupyterLab's notebook search: Ctrl/Cmd+F (in command and edit mode) or the
// toolbar's Find button opens a bar under the toolbar with the query, case
// and regular-expression toggles, "3 of 12", previous/next (Enter,
// Shift+Enter), and a replacement with Replace and Replace all. Matches are
// found in the cells' sources (Markdown cells too: going to a match in a
// rendered one opens its editor) and highlighted in the editors by a
// decoration field the bar adds to each editor it touches
// (StateEffect.appendConfig), the current one stronger. A replacement goes
// through the editor (one undo step per match, Replace all one per cell),
// so autosave writes it like any edit. Esc closes the bar and gives the
// focus back to the notebook.
//
//   const find = findBar(nb)   nb: the Notebook (cells, sel, select, renderCell,
//                              touch, refocus, events, root)
//   find.button                the toolbar button
//   find.el                    the bar (hidden until opened)
//   find.open()
import { EditorView, Decoration } from '@codemirror/view';
import { StateField, StateEffect, EditorSelection } from '@codemirror/state';
import { h, toast } from './ui.js';
import { onLeave } from './app.js';
import './findbar.css';

const MAX_MATCHES = 10000;
const MAX_QUERY = 1000;

// ---- highlighting in an editor -------------------------------------------------
const setFind = StateEffect.define();   // value: [{from, to, current}]
const matchMark = Decoration.mark({ class: 'cm-findMatch' });
const currentMark = Decoration.mark({ class: 'cm-findMatch cm-findMatch-current' });
const findField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (e.is(setFind)) deco = Decoration.set(e.value.map((r) => (r.current ? currentMark : matchMark).range(r.from, r.to)), true);
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

function highlight(view, ranges) {
  const effects = [setFind.of(ranges)];
  if (view.state.field(findField, false) === undefined) effects.unshift(StateEffect.appendConfig.of(findField));
  view.dispatch({ effects });
}

// ---- matching ---------------------------------------------------------------------
const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The query as a global RegExp, or {error} for a bad regular expression, or
// null when empty.
export function compileQuery({ text, caseSensitive, regex }) {
  if (!text) return null;
  try {
    return new RegExp(regex ? text : escapeRe(text), `gmu${caseSensitive ? '' : 'i'}`);
  } catch (e) {
    return { error: e.message };
  }
}

// Every match of re in text: [{from, to, m}] (empty matches skipped).
export function matchesIn(text, re, limit = MAX_MATCHES) {
  const out = [];
  re.lastIndex = 0;
  let m;
  while (out.length < limit && (m = re.exec(text)) !== null) {
    if (m[0].length === 0) { re.lastIndex += text.codePointAt(m.index) > 0xffff ? 2 : 1; if (re.lastIndex > text.length) break; continue; }
    out.push({ from: m.index, to: m.index + m[0].length, m });
  }
  return out;
}

// The replacement for match m: JavaScript's String.replace patterns in a
// regular expression search ($&, $1, $<name>, $$), the text as is otherwise.
export function expandReplacement(repl, m, regex) {
  if (!regex) return repl;
  return repl.replace(/\$(\$|&|\d{1,2}|<([^>]*)>)/g, (all, what, name) => {
    if (what === '$') return '$';
    if (what === '&') return m[0];
    if (name !== undefined) return m.groups && m.groups[name] !== undefined ? m.groups[name] : '';
    let n = Number(what);
    if (n >= m.length && what.length === 2) { n = Number(what[0]); if (n > 0 && n < m.length) return (m[n] ?? '') + what[1]; }
    return n > 0 && n < m.length ? m[n] ?? '' : all;
  });
}

// ---- the bar -------------------------------------------------------------------------
export function findBar(nb) {
  const q = { text: '', caseSensitive: false, regex: false };
  let matches = [];          // [{cell, from, to, m}] in notebook order
  let current = -1;
  let capped = false;
  let open = false;
  let timer = 0;
  const shown = new WeakMap();   // editor view -> signature of the ranges it shows

  const btn = (label, title, fn, testid, extra = {}) => h('button', { type: 'button', class: 'small', title, 'aria-label': title, 'data-testid': testid,
    onmousedown: (ev) => ev.preventDefault(), onclick: fn, ...extra }, label);
  const input = h('input', { type: 'search', class: 'find-input', placeholder: 'Find', 'aria-label': 'Find in notebook', 'data-testid': 'find-input', maxlength: String(MAX_QUERY), spellcheck: 'false' });
  const replaceInput = h('input', { type: 'text', class: 'find-input', placeholder: 'Replace', 'aria-label': 'Replace with', 'data-testid': 'replace-input', maxlength: String(MAX_QUERY), spellcheck: 'false' });
  const caseBtn = btn('Aa', 'Match case', () => { q.caseSensitive = !q.caseSensitive; caseBtn.setAttribute('aria-pressed', String(q.caseSensitive)); update(true); }, 'find-case', { 'aria-pressed': 'false' });
  const reBtn = btn('.*', 'Use regular expression', () => { q.regex = !q.regex; reBtn.setAttribute('aria-pressed', String(q.regex)); update(true); }, 'find-regex', { 'aria-pressed': 'false' });
  const count = h('span', { class: 'find-count', 'data-testid': 'find-count', 'aria-live': 'polite' }, '');
  const el = h('div', { class: 'findbar', role: 'search', 'aria-label': 'Find and replace in the notebook', 'data-testid': 'findbar', hidden: true },
    h('div', { class: 'find-row' }, input, caseBtn, reBtn, count,
      btn('↑', 'Previous match (Shift+Enter)', () => step(-1), 'find-prev'),
      btn('↓', 'Next match (Enter)', () => step(1), 'find-next'),
      btn('×', 'Close (Esc)', () => close(), 'find-close', { class: 'small find-close' })),
    h('div', { class: 'find-row' }, replaceInput,
      btn('Replace', 'Replace this match', () => replaceOne(), 'replace-one'),
      btn('Replace all', 'Replace every match in the notebook', () => replaceAll(), 'replace-all')));
  const button = h('button', { class: 'small', title: 'Find and replace in the notebook (Ctrl+F)', 'data-testid': 'open-find',
    onmousedown: (ev) => ev.preventDefault(), onclick: () => openBar() }, 'Find');

  input.addEventListener('input', () => { q.text = input.value; update(true); });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); ev.stopPropagation(); step(ev.shiftKey ? -1 : 1); }
    else if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); close(); }
  });
  replaceInput.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); ev.stopPropagation(); if (ev.ctrlKey || ev.metaKey) replaceAll(); else replaceOne(); }
    else if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); close(); }
  });

  // Ctrl/Cmd+F anywhere on the notebook page, in either mode, before
  // CodeMirror or the browser's own find see it.
  const onKey = (ev) => {
    if (!(ev.ctrlKey || ev.metaKey) || ev.altKey || ev.shiftKey || ev.key.toLowerCase() !== 'f') return;
    if (!nb.root || !nb.root.isConnected) return;
    const a = document.activeElement;
    if (a && a !== document.body && !nb.root.contains(a)) return;   // a dialog has the focus
    if (a && a.closest && a.closest('.xterm')) return;              // a terminal's Ctrl+F is the shell's
    ev.preventDefault();
    ev.stopPropagation();
    openBar();
  };
  document.addEventListener('keydown', onKey, true);
  const onChange = () => { if (open) { clearTimeout(timer); timer = setTimeout(() => update(false), 120); } };
  nb.events.addEventListener('change', onChange);
  onLeave(() => { document.removeEventListener('keydown', onKey, true); nb.events.removeEventListener('change', onChange); clearTimeout(timer); });

  function openBar() {
    // The selection of the editor being edited (one line of it) becomes the query.
    const cell = nb.cells[nb.sel];
    const ed = cell && cell.editor;
    if (ed && nb.mode === 'edit') {
      const s = ed.state.selection.main;
      const text = ed.state.sliceDoc(s.from, s.to);
      if (text && !text.includes('\n') && text.length <= MAX_QUERY) { input.value = text; q.text = text; }
    }
    el.hidden = false;
    open = true;
    input.focus();
    input.select();
    update(true);
  }

  function close() {
    el.hidden = true;
    open = false;
    clearTimeout(timer);
    for (const c of nb.cells) if (c.editor && shown.get(c.editor)) { highlight(c.editor, []); shown.set(c.editor, ''); }
    matches = [];
    current = -1;
    nb.refocus();
  }

  // Find again: after the query changed (fresh: start from the selected
  // cell) or the cells did (keep the current match where it was).
  function update(fresh) {
    const re = compileQuery(q);
    input.classList.toggle('invalid', !!(re && re.error));
    const before = current >= 0 ? matches[current] : null;
    matches = [];
    capped = false;
    if (re && !re.error) {
      for (const cell of nb.cells) {
        const found = matchesIn(cell.source, re, MAX_MATCHES - matches.length);
        for (const f of found) matches.push({ cell, ...f });
        if (matches.length >= MAX_MATCHES) { capped = true; break; }
      }
    }
    if (!matches.length) current = -1;
    else if (fresh || !before) {
      const sel = Math.max(0, nb.sel);
      current = matches.findIndex((m) => nb.cells.indexOf(m.cell) >= sel);
      if (current < 0) current = 0;
    } else {
      const bi = nb.cells.indexOf(before.cell);
      current = matches.findIndex((m) => { const ci = nb.cells.indexOf(m.cell); return ci > bi || (ci === bi && m.to > before.from); });
      if (current < 0) current = 0;
    }
    paint();
    if (fresh && current >= 0) reveal(matches[current], false);
  }

  function paint() {
    const re = compileQuery(q);
    if (re && re.error) count.textContent = 'Invalid regular expression';
    else if (!q.text) count.textContent = '';
    else if (!matches.length) count.textContent = 'No results';
    else count.textContent = `${current + 1} of ${matches.length}${capped ? '+' : ''}`;
    el.classList.toggle('no-results', !!q.text && !matches.length);
    const byCell = new Map();
    matches.forEach((m, i) => {
      if (!byCell.has(m.cell)) byCell.set(m.cell, []);
      byCell.get(m.cell).push({ from: m.from, to: m.to, current: i === current });
    });
    for (const c of nb.cells) {
      if (!c.editor) continue;
      const ranges = byCell.get(c) || [];
      const sig = ranges.map((r) => `${r.from}-${r.to}${r.current ? '*' : ''}`).join(',');
      if ((shown.get(c.editor) || '') === sig) continue;
      highlight(c.editor, ranges);
      shown.set(c.editor, sig);
    }
  }

  // Show match m: open a rendered Markdown cell's editor, select the cell
  // (the mode stays), select the match in the editor and scroll to it.
  function reveal(m, select = true) {
    const i = nb.cells.indexOf(m.cell);
    if (i < 0) return;
    if (!m.cell.editor && m.cell.type === 'markdown') { m.cell.editing = true; nb.renderCell(m.cell); shown.delete(m.cell.editor); paint(); }
    if (i !== nb.sel) nb.select(i, { keepMode: true, scroll: false });
    const ed = m.cell.editor;
    if (!ed) { m.cell.el.scrollIntoView({ block: 'nearest' }); return; }
    ed.dispatch({
      selection: select ? EditorSelection.single(m.from, m.to) : undefined,
      effects: EditorView.scrollIntoView(m.from, { y: 'center' }),
    });
  }

  function step(dir) {
    if (!matches.length) { update(true); if (!matches.length) return; }
    current = (current + dir + matches.length) % matches.length;
    paint();
    reveal(matches[current]);
  }

  // Put `text` in place of [from, to) of a cell's source: through its editor
  // (undo, autosave), or in the source of a rendered Markdown cell.
  function edit(cell, changes) {
    if (cell.editor) { cell.editor.dispatch({ changes, userEvent: 'input.replace' }); return; }
    let s = cell.source;
    for (const c of [...changes].sort((a, b) => b.from - a.from)) s = s.slice(0, c.from) + c.insert + s.slice(c.to);
    cell.source = s;
    nb.renderCell(cell);
    nb.touch();
  }

  function replaceOne() {
    update(false);
    if (current < 0) return;
    const m = matches[current];
    const insert = expandReplacement(replaceInput.value, m.m, q.regex);
    edit(m.cell, [{ from: m.from, to: m.to, insert }]);
    // On to the next match after the replacement.
    const cell = m.cell, after = m.from + insert.length;
    update(false);
    const next = matches.findIndex((x) => { const ci = nb.cells.indexOf(x.cell), bi = nb.cells.indexOf(cell); return ci > bi || (ci === bi && x.from >= after); });
    current = matches.length ? (next >= 0 ? next : 0) : -1;
    paint();
    if (current >= 0) reveal(matches[current]);
  }

  function replaceAll() {
    update(false);
    if (!matches.length) return;
    const byCell = new Map();
    for (const m of matches) {
      if (!byCell.has(m.cell)) byCell.set(m.cell, []);
      byCell.get(m.cell).push({ from: m.from, to: m.to, insert: expandReplacement(replaceInput.value, m.m, q.regex) });
    }
    const n = matches.length;
    for (const [cell, changes] of byCell) edit(cell, changes);
    update(false);
    toast(`Replaced ${n} match${n === 1 ? '' : 'es'} in ${byCell.size} cell${byCell.size === 1 ? '' : 's'}`);
  }

  return { button, el, open: openBar };
}
