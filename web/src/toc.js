// The notebook's table of contents: the Markdown headings of its cells (ATX
// "# ..." to "###### ...", and setext "===" / "---" underlines), outside
// fenced code, as an indented list that follows the cells (nb.events
// 'change'). A click selects the heading's cell and scrolls it to the top.
// Numbering (1, 1.1, 1.2, 2 ...) as JupyterLab's, optional and remembered.
import { h, clear } from './ui.js';

const NUMBERED_KEY = 'eddy.toc.numbered';
const MAX_HEADINGS = 1000;

// Inline Markdown to the text a reader sees: links, images, emphasis, code
// and HTML tags dropped, entities of the common kind decoded.
export function plainHeading(s) {
  return s
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|__|\*|_|~~|`)(.+?)\1/g, '$2')
    .replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
    .replace(/\s+/g, ' ')
    .trim();
}

// The headings of one Markdown source: [{level, text}].
export function headingsOf(source) {
  const out = [];
  const lines = String(source || '').split(/\r?\n/);
  let fence = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const f = line.match(/^ {0,3}(`{3,}|~{3,})/);
    if (f) {
      if (!fence) fence = f[1];
      else if (f[1][0] === fence[0] && f[1].length >= fence.length) fence = null;
      continue;
    }
    if (fence) continue;
    const atx = line.match(/^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/);
    if (atx) {
      const text = plainHeading(atx[2] || '');
      if (text) out.push({ level: atx[1].length, text });
      continue;
    }
    const next = lines[i + 1];
    if (next !== undefined && line.trim() && !/^ {0,3}([-*+>]|\d+[.)])\s/.test(line) && /^ {0,3}(=+|-+)[ \t]*$/.test(next)) {
      out.push({ level: next.trim()[0] === '=' ? 1 : 2, text: plainHeading(line) });
      i++;
    }
  }
  return out;
}

// Every heading of the notebook's Markdown cells: [{level, text, cell, index}].
function collect(nb) {
  const out = [];
  nb.cells.forEach((cell, index) => {
    if (cell.type !== 'markdown' || out.length >= MAX_HEADINGS) return;
    for (const hd of headingsOf(cell.source)) out.push({ ...hd, cell, index });
  });
  return out.slice(0, MAX_HEADINGS);
}

// "1.2.1"-style numbers; levels skipped count from the nearest one above.
function numbers(headings) {
  const min = Math.min(...headings.map((x) => x.level));
  const counters = [];
  return headings.map((x) => {
    const depth = x.level - min;
    counters.length = depth + 1;
    for (let d = 0; d < depth; d++) if (!counters[d]) counters[d] = 1;
    counters[depth] = (counters[depth] || 0) + 1;
    return counters.join('.');
  });
}

// Returns {el, stop}.
export function tableOfContents(nb) {
  let numbered = localStorage.getItem(NUMBERED_KEY) === '1';
  const list = h('ol', { class: 'toc-list', 'data-testid': 'toc', 'aria-label': 'Table of contents' });
  const toggle = h('input', {
    type: 'checkbox', checked: numbered, 'data-testid': 'toc-numbered',
    onchange: () => { numbered = toggle.checked; try { localStorage.setItem(NUMBERED_KEY, numbered ? '1' : '0'); } catch { /* full */ } draw(); },
  });
  const el = h('div', { class: 'toc' }, h('label', { class: 'toc-opt muted' }, toggle, ' Numbered'), list);
  let sig = null;

  function go(x) {
    const i = nb.cells.indexOf(x.cell);
    if (i < 0) return;
    nb.select(i, { scroll: false });
    x.cell.el.scrollIntoView({ block: 'start' });
  }

  function draw() {
    const hs = collect(nb);
    const s = `${numbered}\u0001` + hs.map((x) => `${x.level}\u0000${x.text}\u0000${x.index}`).join('\u0001');
    if (s === sig) return;
    sig = s;
    if (!hs.length) { clear(list, h('li', { class: 'toc-empty muted' }, 'No headings yet: a Markdown cell starting with # adds one.')); return; }
    const nums = numbered ? numbers(hs) : null;
    const min = Math.min(...hs.map((x) => x.level));
    clear(list, hs.map((x, k) => h('li', { class: `toc-item level-${x.level}`, style: { paddingLeft: `${(x.level - min) * 0.9}rem` } },
      h('button', { class: 'toc-link', title: x.text, 'data-cell-id': x.cell.id, 'data-level': String(x.level), onclick: () => go(x) },
        nums ? h('span', { class: 'toc-num' }, `${nums[k]} `) : null, x.text))));
  }

  // Many 'change' events arrive while typing: draw once per quiet moment.
  let timer = null;
  const onChange = () => { clearTimeout(timer); timer = setTimeout(draw, 150); };
  nb.events.addEventListener('change', onChange);
  draw();
  return { el, refresh: draw, stop() { clearTimeout(timer); nb.events.removeEventListener('change', onChange); } };
}
