// The notebook's side panel, left of the cells: the project's files
// (filebrowser.js), its attached datasets (datasets_panel.js) and the
// notebook's table of contents (toc.js), each a section that folds. The
// panel collapses to a thin strip (its toggle button), is resizable by its right edge (drag, or arrow keys on it), and remembers open/closed, width and folded sections in
// localStorage; on a narrow screen it starts collapsed. While collapsed (or
// its Files section folded) the file list is not polled.
import './sidepanel.css';
import { h } from './ui.js';
import { onLeave } from './app.js';
import { fileBrowser } from './filebrowser.js';
import { tableOfContents } from './toc.js';
import { datasetsPanel } from './datasets_panel.js';

const KEY = 'eddy.sidepanel';
const MIN_W = 180, MAX_W = 560, DEFAULT_W = 256;   // px (default 16rem)
const NARROW = '(max-width: 900px)';

function loadState() {
  let s = {};
  try { s = JSON.parse(localStorage.getItem(KEY) || '{}') || {}; } catch { /* fresh */ }
  return {
    open: s.open !== false,
    width: Math.min(MAX_W, Math.max(MIN_W, Number(s.width) || DEFAULT_W)),
    files: s.files !== false,
    contents: s.contents !== false,
    datasets: s.datasets !== false,
  };
}

export function sidePanel(nb) {
  const state = loadState();
  const narrow = window.matchMedia && window.matchMedia(NARROW).matches;
  let open = state.open && !narrow;   // narrow screens start collapsed (not remembered)
  const save = () => { try { localStorage.setItem(KEY, JSON.stringify({ ...state, open: narrow ? state.open : open })); } catch { /* full */ } };

  const section = (key, title, testid, body) => {
    const head = h('button', {
      class: 'sp-head', 'aria-expanded': String(state[key]), 'data-testid': `${testid}-head`,
      onclick: () => {
        state[key] = !state[key];
        head.setAttribute('aria-expanded', String(state[key]));
        sec.classList.toggle('folded', !state[key]);
        save();
        if (key === 'files' && state.files) files.refresh();
        if (key === 'datasets' && state.datasets) datasets.refresh();
      },
    }, h('span', { class: 'sp-caret', 'aria-hidden': 'true' }), title);
    const sec = h('section', { class: `sp-section sp-${key}${state[key] ? '' : ' folded'}`, 'data-testid': testid, 'aria-label': title }, head, h('div', { class: 'sp-body' }, body));
    return sec;
  };

  const files = fileBrowser(nb, { active: () => open && state.files });
  const toc = tableOfContents(nb);
  // Attached datasets change only through this section (or another client):
  // loaded when shown, not polled.
  const datasets = datasetsPanel(nb, { active: () => open && state.datasets });
  const toggle = h('button', {
    class: 'sp-toggle', 'data-testid': 'side-panel-toggle',
    onclick: () => { open = !open; state.open = open; apply(); save(); if (open) { files.refresh(); if (!datasets.loaded()) datasets.refresh(); } },
  });
  const handle = h('div', { class: 'sp-resize', role: 'separator', 'aria-orientation': 'vertical', 'aria-label': 'Resize the side panel', tabindex: '0' });
  const inner = h('div', { class: 'sp-inner' },
    section('files', 'Files', 'side-files', files.el),
    section('datasets', 'Datasets', 'side-datasets', datasets.el),
    section('contents', 'Contents', 'side-contents', toc.el));
  const el = h('aside', { class: 'side-panel', 'data-testid': 'side-panel', 'aria-label': 'Files, datasets and contents' }, toggle, inner, handle);

  function apply() {
    el.classList.toggle('collapsed', !open);
    el.style.width = open ? `${state.width}px` : '';
    toggle.textContent = open ? '«' : '»';
    toggle.title = open ? 'Hide the side panel' : 'Show files and contents';
    toggle.setAttribute('aria-label', toggle.title);
    toggle.setAttribute('aria-expanded', String(open));
  }

  // Resizing: drag the right edge, or arrow keys on it.
  const setWidth = (w) => { state.width = Math.round(Math.min(MAX_W, Math.max(MIN_W, w))); el.style.width = `${state.width}px`; };
  handle.addEventListener('pointerdown', (ev) => {
    if (!open) return;
    ev.preventDefault();
    handle.setPointerCapture(ev.pointerId);
    const x0 = ev.clientX, w0 = state.width;
    const move = (e) => setWidth(w0 + e.clientX - x0);
    const up = () => { handle.removeEventListener('pointermove', move); handle.removeEventListener('pointerup', up); save(); };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', up);
  });
  handle.addEventListener('keydown', (ev) => {
    if (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') return;
    ev.preventDefault();
    ev.stopPropagation();
    setWidth(state.width + (ev.key === 'ArrowRight' ? 16 : -16));
    save();
  });

  apply();
  datasets.refresh();
  onLeave(() => { files.stop(); toc.stop(); });
  return el;
}
