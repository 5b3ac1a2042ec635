// Stream output (stdout/stderr) of a notebook cell, rendered incrementally:
// new text is appended to the cell's existing <pre> (a text node per frame,
// never the whole output again), and beyond STREAM_MAX_LINES lines or
// STREAM_MAX_CHARS characters only the tail stays in the page, under a
// "N lines hidden — show all / download" bar. The output's text itself (the
// nbformat output the notebook saves) always keeps every line.
import { h } from './ui.js';

// 20,000 printed lines (issue 14's yardstick) all stay; 200,000 collapse.
export const STREAM_MAX_LINES = 25000;
export const STREAM_MAX_CHARS = 1 << 20;

// nbformat text: a string or a list of strings.
export const nbText = (s) => (Array.isArray(s) ? s.join('') : s || '');
const src = nbText;
export const stripAnsi = (s) => s.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');

function countLines(s) {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

// The start of the last `lines` lines of s (a trailing partial line counts as one).
function tailStart(s, lines, maxChars) {
  let i = s.length;
  if (s.endsWith('\n')) i--;
  for (let n = 0; n < lines && i > 0; n++) {
    const j = s.lastIndexOf('\n', i - 1);
    if (j === -1) return Math.max(0, s.length - maxChars);
    i = j;
  }
  const start = i > 0 ? i + 1 : 0;
  return Math.max(start, s.length - maxChars);
}

// A stream output's view: { el, update() } where update() shows whatever
// text the output `o` (an nbformat stream output, whose text grows in place)
// gained since the last call. opts.expanded starts it with every line shown
// (the cell's "show all" survives its outputs being rebuilt); opts.onExpand
// is called when "show all" is pressed.
export function streamView(o, opts = {}) {
  const pre = h('pre', { class: `out stream ${o.name === 'stderr' ? 'stderr' : ''}` });
  const bar = h('div', { class: 'out out-hidden muted', 'data-testid': 'output-hidden', hidden: true });
  const el = h('div', { class: 'out-stream' }, bar, pre);
  let seen = 0;          // characters of src(o.text) shown or hidden so far
  let shownLines = 0;    // newlines in the <pre>
  let shownChars = 0;
  let hiddenLines = 0;   // newlines cut from the top
  let hiddenChars = 0;   // characters cut from the top
  let expanded = !!opts.expanded;  // "show all" was pressed

  const full = () => stripAnsi(src(o.text));
  const showBar = () => {
    bar.hidden = hiddenChars === 0;
    if (bar.hidden) return;
    const dl = h('a', { href: '#', 'data-testid': 'output-download', onclick: (e) => {
      e.preventDefault();
      const url = URL.createObjectURL(new Blob([full()], { type: 'text/plain;charset=utf-8' }));
      const a = h('a', { href: url, download: `${o.name || 'output'}.txt` });
      document.body.append(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } }, 'download');
    const all = h('a', { href: '#', 'data-testid': 'output-show-all', onclick: (e) => {
      e.preventDefault();
      expanded = true;
      opts.onExpand?.();
      const t = full();
      pre.replaceChildren(document.createTextNode(t));
      shownLines = countLines(t); shownChars = t.length; hiddenLines = 0; hiddenChars = 0;
      showBar();
    } }, 'show all');
    bar.replaceChildren(hiddenLines ? `${hiddenLines.toLocaleString()} lines hidden — ` : `${hiddenChars.toLocaleString()} characters hidden — `, all, ' / ', dl);
  };

  // Keep only the tail when the <pre> holds too much (cut to the limit, so a
  // cut happens once per STREAM_MAX_LINES lines at most).
  const trim = () => {
    if (expanded || (shownLines <= STREAM_MAX_LINES * 1.25 && shownChars <= STREAM_MAX_CHARS)) return;
    const t = pre.textContent;
    const start = tailStart(t, STREAM_MAX_LINES, STREAM_MAX_CHARS);
    if (start <= 0) return;
    const cut = t.slice(0, start);
    hiddenLines += countLines(cut); hiddenChars += cut.length;
    const rest = t.slice(start);
    pre.replaceChildren(document.createTextNode(rest));
    shownLines = countLines(rest); shownChars = rest.length;
  };

  const update = () => {
    const s = src(o.text);
    if (s.length < seen) {   // the text was replaced, not grown: start over
      pre.replaceChildren(); seen = 0; shownLines = 0; shownChars = 0; hiddenLines = 0; hiddenChars = 0;
    }
    if (s.length === seen) return;
    let add = stripAnsi(s.slice(seen));
    seen = s.length;
    // A first chunk too big for the page: keep its tail only.
    if (!expanded && add.length > STREAM_MAX_CHARS / 4 && countLines(add) > STREAM_MAX_LINES) {
      const start = tailStart(add, STREAM_MAX_LINES, STREAM_MAX_CHARS);
      hiddenLines += countLines(add.slice(0, start)) + shownLines; hiddenChars += start + shownChars;
      add = add.slice(start);
      pre.replaceChildren(); shownLines = 0; shownChars = 0;
    }
    pre.append(document.createTextNode(add));
    shownLines += countLines(add); shownChars += add.length;
    trim();
    showBar();
  };
  update();
  return { el, update, output: o };
}
