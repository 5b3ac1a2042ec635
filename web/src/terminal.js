// A terminal in the notebook page: a shell inside the kernel's sandbox (same
// limits, same /home/aistudio/work), drawn by xterm.js in a dock at the
// bottom of the window that the user can resize by its top edge. Loaded
// lazily by terminal_button.js (xterm is not in the entry chunk).
//
// The server side (API.md "Terminals"): POST /api/v1/kernels/{id}/terminals
// opens one; its WebSocket speaks terminado's protocol: we send ["stdin", s]
// and ["set_size", rows, cols]; it sends ["setup", {}], ["stdout", s] (first
// the last 64 KiB, so a reconnecting page redraws the screen) and
// ["disconnect", 1] when the shell ends. The terminal's name is kept in
// sessionStorage per project, so after a reload the button reconnects to the
// same shell; the socket reconnects by itself when it drops (a server
// restart of the connection, a page too slow for a flood of output).
//
// The shell learns the screen's size only once it has held for a moment, and
// never a size no dock has: the layout can give the screen a width of a few
// pixels for a frame (seen as a modal dialog opens over the page: the fit
// said 2 columns, then 168), and a shell told so redraws its prompt for 2
// columns; told the real width again, bash's readline erases the ~15 lines
// it then thinks its prompt took, i.e. the screen above the prompt. Those
// erasures are output like any other, so the server's replay after a reload
// replayed them too and the screen came back empty.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import './terminal.css';
import { api, ApiError } from './api.js';
import { h, toast } from './ui.js';
import { onLeave } from './app.js';

const enc = encodeURIComponent;
const RECONNECT_MS = 1000;
const MIN_H = 120;
// No dock is smaller than this (MIN_H gives 5 rows; a phone 40 columns): a
// smaller fit is a layout of a moment, ignored.
const MIN_COLS = 20;
const MIN_ROWS = 2;
const SIZE_SETTLE_MS = 200;   // the shell gets a size that held this long

let dock = null;   // the page's one terminal dock

const storeKey = (projectId) => `eddy.terminal.${projectId}`;
const loadSaved = (projectId) => { try { return JSON.parse(sessionStorage.getItem(storeKey(projectId)) || 'null'); } catch { return null; } };
const save = (projectId, v) => { if (v) sessionStorage.setItem(storeKey(projectId), JSON.stringify(v)); else sessionStorage.removeItem(storeKey(projectId)); };

// Open (or show again) the terminal of `nb`'s running `kernel`.
export async function openTerminal(nb, kernel) {
  if (dock && dock.nb === nb && dock.kernelId === kernel.id && !dock.ended) {
    dock.show();
    return dock;
  }
  if (dock) dock.dispose();
  // the same shell after a reload, while it lives; else a new one
  let name = null;
  const saved = loadSaved(nb.projectId);
  if (saved && saved.kernel === kernel.id) {
    try {
      await api.get(`/api/v1/kernels/${enc(kernel.id)}/terminals/${enc(saved.name)}`);
      name = saved.name;
    } catch (e) { if (!(e instanceof ApiError && e.status === 404)) throw e; }
  }
  if (!name) {
    const t = await api.post(`/api/v1/kernels/${enc(kernel.id)}/terminals`, { rows: 24, cols: 80 });
    name = t.name;
  }
  save(nb.projectId, { kernel: kernel.id, name });
  dock = new TerminalDock(nb, kernel.id, name);
  return dock;
}

class TerminalDock {
  constructor(nb, kernelId, name) {
    this.nb = nb;
    this.kernelId = kernelId;
    this.name = name;
    this.ended = false;
    this.disposed = false;
    this.height = Math.max(MIN_H, Math.round(window.innerHeight * 0.38));

    this.state = h('span', { class: 'term-state', 'data-testid': 'terminal-state' }, 'connecting…');
    this.screen = h('div', { class: 'term-screen', 'data-testid': 'terminal-screen' });
    const grip = h('div', { class: 'term-grip', title: 'Drag to resize', role: 'separator', 'aria-orientation': 'horizontal' });
    this.el = h('section', { class: 'term-dock', 'aria-label': 'Terminal', 'data-testid': 'terminal-dock' },
      grip,
      h('header', { class: 'term-head' },
        h('strong', null, `Terminal ${name}`),
        h('span', { class: 'muted' }, ` · a shell in kernel ${kernelId.slice(0, 8)}'s sandbox · /home/aistudio/work`),
        this.state,
        h('span', { class: 'spacer' }),
        h('button', { class: 'small', title: 'Hide the terminal (it keeps running)', 'data-testid': 'terminal-hide', onclick: () => this.hide() }, 'Hide'),
        h('button', { class: 'small danger', title: 'End the shell and everything it started', 'data-testid': 'terminal-close', onclick: () => this.close() }, 'Close terminal')),
      this.screen);
    grip.addEventListener('pointerdown', (ev) => this.drag(ev));
    document.body.append(this.el);
    this.setHeight(this.height);

    this.term = new Terminal({ cursorBlink: true, fontSize: 13, scrollback: 5000, convertEol: false,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', theme: { background: '#1d2330' } });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.screen);
    this.term.onData((d) => this.send(['stdin', d]));
    this.resizer = new ResizeObserver(() => this.refit());
    this.resizer.observe(this.screen);
    this.onKernel = (ev) => { const k = ev.detail; if (!k || k.id !== this.kernelId || k.status === 'dead') this.kernelGone(); };
    nb.events?.addEventListener('kernel', this.onKernel);
    onLeave(() => this.dispose());
    this.refit();
    this.connect();
    this.term.focus();
  }

  url() {
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    return `${proto}://${location.host}/api/v1/kernels/${enc(this.kernelId)}/terminals/${enc(this.name)}/ws`;
  }

  connect() {
    if (this.disposed || this.ended) return;
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.onopen = () => { this.state.textContent = ''; this.sentSize = null; this.refit(); this.sendSize(); };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      if (!Array.isArray(m)) return;
      if (m[0] === 'setup') {
        // the replay that follows redraws the screen from the server's ring
        if (this.connectedOnce) this.term.reset();
        this.connectedOnce = true;
      } else if (m[0] === 'stdout') {
        this.term.write(m[1]);
      } else if (m[0] === 'disconnect') {
        this.end('the shell ended');
      }
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.disposed || this.ended) return;
      this.state.textContent = 'reconnecting…';
      clearTimeout(this.retry);
      this.retry = setTimeout(() => this.reconnect(), RECONNECT_MS);
    };
  }

  // The socket dropped: reconnect while the terminal exists.
  async reconnect() {
    if (this.disposed || this.ended) return;
    try {
      await api.get(`/api/v1/kernels/${enc(this.kernelId)}/terminals/${enc(this.name)}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) { this.end('the terminal is gone'); return; }
    }
    this.connect();
  }

  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  // Fit xterm to the screen's box, and tell the shell once the size settles.
  refit() {
    if (this.disposed || this.el.hidden) return;
    let dims;
    try { dims = this.fit.proposeDimensions(); } catch { return; }
    if (!dims || !(dims.cols >= MIN_COLS && dims.rows >= MIN_ROWS)) return;   // not laid out: keep the last size
    if (dims.cols !== this.term.cols || dims.rows !== this.term.rows) this.term.resize(dims.cols, dims.rows);
    clearTimeout(this.sizeTimer);
    this.sizeTimer = setTimeout(() => this.sendSize(), SIZE_SETTLE_MS);
  }

  sendSize() {
    clearTimeout(this.sizeTimer);
    this.sizeTimer = null;
    const size = `${this.term.rows}x${this.term.cols}`;
    if (!this.disposed && size !== this.sentSize && this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.sentSize = size;
      this.send(['set_size', this.term.rows, this.term.cols]);
    }
  }

  setHeight(px) {
    this.height = Math.max(MIN_H, Math.min(px, window.innerHeight - 80));
    this.el.style.height = `${this.height}px`;
    document.body.style.paddingBottom = this.el.hidden ? '' : `${this.height}px`;
  }

  drag(ev) {
    ev.preventDefault();
    const move = (e) => this.setHeight(window.innerHeight - e.clientY);
    const up = () => { window.removeEventListener('pointermove', move); window.removeEventListener('pointerup', up); this.refit(); };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
  }

  show() {
    this.el.hidden = false;
    this.setHeight(this.height);
    this.refit();
    this.term.focus();
  }

  hide() {
    this.el.hidden = true;
    document.body.style.paddingBottom = '';
  }

  end(why) {
    if (this.ended) return;
    this.ended = true;
    this.state.textContent = why;
    this.term.write(`\r\n\x1b[2m[${why}]\x1b[0m\r\n`);
    const saved = loadSaved(this.nb.projectId);
    if (saved && saved.name === this.name && saved.kernel === this.kernelId) save(this.nb.projectId, null);
    if (this.ws) { const ws = this.ws; this.ws = null; ws.close(); }
  }

  kernelGone() {
    this.end('the kernel stopped');
  }

  async close() {
    try {
      if (!this.ended) await api.del(`/api/v1/kernels/${enc(this.kernelId)}/terminals/${enc(this.name)}`);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) { toast(`Terminal: ${e.message}`, 'error'); return; }
    }
    this.end('closed');
    this.dispose();
  }

  // Leave the page (or replace the dock): the shell keeps running for a reload.
  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    clearTimeout(this.retry);
    clearTimeout(this.sizeTimer);
    if (this.ws) { const ws = this.ws; this.ws = null; ws.close(); }
    this.resizer.disconnect();
    this.nb.events?.removeEventListener('kernel', this.onKernel);
    this.term.dispose();
    this.el.remove();
    document.body.style.paddingBottom = '';
    if (dock === this) dock = null;
  }
}
