// Code intelligence in a cell's editor (issue 14), through the notebook's
// kernel (kernel_client.js request(): Jupyter complete_request and
// inspect_request over the kernel's channels WebSocket):
//   Tab          after a name, an attribute (`paddle.nn.Lin`), `import x`,
//                `from m import x`, a dict key (`d["k`), a file path in a
//                string or a call's parameter (`Linear(3, 4, bi` -> bias_attr=):
//                the kernel's completions in a list (Enter or Tab takes one, Esc closes);
//                anywhere else it indents to the next multiple of 4 spaces
//                (a selection: its lines). Without a running kernel the list
//                offers the words of the notebook: completion never starts a
//                kernel.
//   typing `.`   the same list, a moment later (continuous hinting; off with
//                localStorage['eddy.codeintel.hint'] = 'off')
//   Shift+Tab    after code: the kernel's documentation of the name at the
//                cursor (signature, docstring: IPython's `obj?`) in a
//                tooltip that Esc, typing or moving away closes; at the
//                start of a line or with a selection it dedents
//   Ctrl/Cmd+/   toggles `# ` on the selected lines (Markdown: <!-- -->;
//                defaultKeymap's toggleComment, the language's comment token)
// plus closing brackets and quotes as they are typed (closeBrackets).
// Markdown cells get the comment toggle and brackets only; raw cells nothing.
import { autocompletion, closeBrackets, closeBracketsKeymap, completionStatus, acceptCompletion, startCompletion } from '@codemirror/autocomplete';
import { keymap, showTooltip, EditorView } from '@codemirror/view';
import { StateField, StateEffect, Prec, EditorSelection } from '@codemirror/state';
import { indentMore, indentLess } from '@codemirror/commands';
import './codeintel.css';

const COMPLETE_TIMEOUT_MS = 3000;
const INSPECT_TIMEOUT_MS = 5000;
const MAX_WORDS = 200;
const MAX_OPTIONS = 500;

// Jupyter counts cursor positions in code points; JavaScript strings in
// UTF-16 units. Both directions, for text with characters beyond the BMP.
export function toCodePoints(text, offset) {
  let n = 0;
  for (let i = 0; i < offset; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < offset) i++;
    n++;
  }
  return n;
}

export function fromCodePoints(text, points) {
  let i = 0;
  for (let n = 0; n < points && i < text.length; n++) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
  }
  return i;
}

const KIND = { function: 'function', class: 'class', module: 'namespace', keyword: 'keyword', instance: 'variable', property: 'property', key: 'constant', param: 'variable', statement: 'keyword', path: 'text' };

// Whether a line's text up to the cursor ends inside a string literal.
function inString(before) {
  let q = null;
  for (let i = 0; i < before.length; i++) {
    const ch = before[i];
    if (!q) {
      if (ch === '#') return false;
      if (ch === '"' || ch === "'") { q = before.startsWith(ch.repeat(3), i) ? ch.repeat(3) : ch; i += q.length - 1; }
    } else if (ch === '\\') i++;
    else if (before.startsWith(q, i)) { i += q.length - 1; q = null; }
  }
  return !!q;
}

// Where Tab asks for completions rather than indenting: after a word
// character or a dot, after `import ` / `from `, or in a string (a dict
// key, a file path) unless after a space.
function wantsCompletion(before) {
  return /(?:[\w.]|\b(?:import|from)\s+)$/.test(before) || (inString(before) && !/\s$/.test(before));
}

function hintingOn() {
  try { return localStorage.getItem('eddy.codeintel.hint') !== 'off'; } catch { return true; }
}

// Words of every cell of the notebook starting with `prefix` (the fallback
// when no kernel runs).
function notebookWords(nb, prefix, exclude) {
  const seen = new Set();
  const out = [];
  for (const c of nb.cells) {
    for (const m of c.source.matchAll(/[A-Za-z_][\w]*/g)) {
      const w = m[0];
      if (w === exclude || w.length < 2 || seen.has(w) || !w.startsWith(prefix)) continue;
      seen.add(w);
      out.push({ label: w, type: 'text' });
      if (out.length >= MAX_WORDS) return out;
    }
  }
  return out;
}

function kernelUp(nb) {
  const k = nb.kc && nb.kc.kernel;
  return !!k && (k.status === 'idle' || k.status === 'busy');
}

// The completion source: the kernel's complete_reply, or the notebook's words.
function completionSource(nb) {
  return async (ctx) => {
    const line = ctx.state.doc.lineAt(ctx.pos);
    const before = line.text.slice(0, ctx.pos - line.from);
    if (!ctx.explicit && !/\.\w*$/.test(before)) return null;
    const code = ctx.state.doc.toString();
    if (kernelUp(nb) && nb.kc.kernel.status === 'idle') {
      try {
        const r = await nb.kc.request('complete_request', { code, cursor_pos: toCodePoints(code, ctx.pos) }, { timeoutMs: COMPLETE_TIMEOUT_MS });
        if (ctx.aborted) return null;
        if (r && r.status === 'ok' && Array.isArray(r.matches) && r.matches.length) {
          const types = r.metadata?._jupyter_types_experimental || [];
          const kindOf = new Map(types.map((t) => [t.text, t.type]));
          let from = fromCodePoints(code, r.cursor_start);
          if (from > ctx.pos || from < line.from) return null;
          // Kernels answer `os.pa` with whole dotted names (os.path, ...):
          // the list shows, and replaces, only what follows the last dot.
          let matches = r.matches.slice(0, MAX_OPTIONS).map(String);
          const typed = code.slice(from, ctx.pos);
          const pre = typed.slice(0, typed.lastIndexOf('.') + 1);
          const kinds = matches.map((m) => KIND[kindOf.get(m)] || 'variable');
          if (pre && matches.every((m) => m.startsWith(pre))) { from += pre.length; matches = matches.map((m) => m.slice(pre.length)); }
          return {
            from,
            to: ctx.pos,
            options: matches.map((m, i) => ({ label: m, type: kinds[i] })),
            validFor: /^[\w.=/-]*$/,
          };
        }
      } catch { /* no answer in time: fall back to the notebook's words */ }
      if (ctx.aborted) return null;
    }
    const w = ctx.matchBefore(/[A-Za-z_]\w*$/);
    if (!w) return null;
    const options = notebookWords(nb, w.text, w.text);
    return options.length ? { from: w.from, options, validFor: /^\w*$/ } : null;
  };
}

// Tab: take the open list's choice, or ask for completions, or indent.
function tabCommand(withKernel) {
  return (view) => {
    if (completionStatus(view.state) === 'active') return acceptCompletion(view);
    const sel = view.state.selection.main;
    if (!sel.empty || view.state.selection.ranges.length > 1) return indentMore(view);
    const line = view.state.doc.lineAt(sel.head);
    const before = line.text.slice(0, sel.head - line.from);
    if (withKernel && before.trim() && wantsCompletion(before)) { startCompletion(view); return true; }
    // Spaces up to the next multiple of 4 columns (JupyterLab's Tab).
    const n = 4 - (before.length % 4);
    view.dispatch(view.state.update({ changes: { from: sel.head, insert: ' '.repeat(n) }, selection: EditorSelection.cursor(sel.head + n), scrollIntoView: true, userEvent: 'input.indent' }));
    return true;
  };
}

// ---- the documentation tooltip (Shift+Tab) ----------------------------------
const setDoc = StateEffect.define();
const docField = StateField.define({
  create: () => null,
  update(v, tr) {
    for (const e of tr.effects) if (e.is(setDoc)) v = e.value;
    if (v && (tr.docChanged || (tr.selection && tr.selection.main.head !== v.pos))) return null;
    return v;
  },
  provide: (f) => showTooltip.from(f, (v) => (v ? {
    pos: v.pos,
    above: false,
    create: (view) => {
      const dom = document.createElement('div');
      dom.className = 'cm-doc-tooltip';
      dom.setAttribute('data-testid', 'doc-tooltip');
      dom.setAttribute('role', 'tooltip');
      dom.tabIndex = -1;   // a click in it (to scroll or copy) keeps it open
      dom.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); closeDoc(view); view.focus(); } });
      const pre = document.createElement('pre');
      pre.textContent = v.text;
      dom.append(pre);
      return { dom };
    },
  } : null)),
});

function stripAnsi(s) { return s.replace(/\x1b\[[0-9;]*[A-Za-z]/g, ''); }

async function showDoc(nb, view) {
  const pos = view.state.selection.main.head;
  const code = view.state.doc.toString();
  const show = (text) => { if (view.state.selection.main.head === pos && view.state.doc.toString() === code) view.dispatch({ effects: setDoc.of({ pos, text }) }); };
  if (!kernelUp(nb)) { show('Run a cell to start the kernel: documentation comes from it.'); return; }
  // The kernel answers one request at a time: behind a running cell it would not answer now.
  if (nb.kc.kernel.status === 'busy' && nb.cells.some((c) => c.count === '*')) { show('The kernel is busy running a cell; try again when it is idle.'); return; }
  try {
    const r = await nb.kc.request('inspect_request', { code, cursor_pos: toCodePoints(code, pos), detail_level: 0 }, { timeoutMs: INSPECT_TIMEOUT_MS });
    const text = r && r.found && r.data && r.data['text/plain'];
    show(text ? stripAnsi(String(text)) : 'No documentation found for the name at the cursor.');
  } catch (e) {
    show(nb.kc.kernel && nb.kc.kernel.status === 'busy' ? 'The kernel is busy running a cell; try again when it is idle.' : `No documentation: ${e.message}`);
  }
}

function shiftTabCommand(nb, withKernel) {
  return (view) => {
    const sel = view.state.selection.main;
    const line = view.state.doc.lineAt(sel.head);
    const before = line.text.slice(0, sel.head - line.from);
    if (!withKernel || !sel.empty || !before.trim()) return indentLess(view);
    showDoc(nb, view);
    return true;
  };
}

const closeDoc = (view) => {
  if (!view.state.field(docField, false)) return false;
  view.dispatch({ effects: setDoc.of(null) });
  return true;
};

// Continuous hinting: a moment after a `.` typed after a name, a bracket or
// a quote (not in a number or a comment), ask for completions.
const HINT_DELAY_MS = 200;
function hintAfterDot() {
  let timer = 0;
  return EditorView.updateListener.of((u) => {
    if (!u.docChanged) return;
    clearTimeout(timer);
    if (!hintingOn() || !u.transactions.some((tr) => tr.isUserEvent('input.type'))) return;
    const { state } = u;
    const head = state.selection.main.head;
    const line = state.doc.lineAt(head);
    const before = line.text.slice(0, head - line.from);
    if (!/[\w\])'"]\.$/.test(before) || /^\s*#/.test(before) || /(?:^|[^\w.])\d+\.$/.test(before)) return;
    const view = u.view;
    timer = setTimeout(() => {
      if (view.state.selection.main.head === head && view.state.doc === state.doc && view.hasFocus && completionStatus(view.state) === null) startCompletion(view);
    }, HINT_DELAY_MS);
  });
}

// The extensions for one cell's editor.
export function codeIntel(nb, cell) {
  if (cell.type === 'raw') return [];
  const code = cell.type === 'code';
  return [
    closeBrackets(),
    Prec.highest(keymap.of([
      { key: 'Tab', run: tabCommand(code) },
      { key: 'Shift-Tab', run: shiftTabCommand(nb, code) },
      { key: 'Escape', run: closeDoc },
      ...closeBracketsKeymap,
    ])),
    ...(code ? [
      // Not activateOnTyping: its pending state would take the Esc that
      // leaves edit mode right after typing; `.` starts completion itself.
      autocompletion({ override: [completionSource(nb)], activateOnTyping: false, maxRenderedOptions: 100, icons: true, defaultKeymap: true }),
      hintAfterDot(),
      docField,
      // Leaving the editor closes the tooltip, unless the focus went into it.
      EditorView.domEventHandlers({ blur: (ev, view) => { if (view.state.field(docField, false) && !(ev.relatedTarget && view.dom.contains(ev.relatedTarget))) closeDoc(view); } }),
    ] : []),
  ];
}
