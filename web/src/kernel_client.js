// The notebook page's kernel client: one kernel per open notebook, driven
// through the kernels API (shared/API.md "Resources, kernels, jobs"; what the
// server expects is in kernels/README.md and web/README.md "Running a cell").
// It starts, restarts and interrupts the kernel, follows its messages over
// Server-Sent Events (GET /api/v1/kernels/{id}/events?after=SEQ, which replays
// the kernel's journal, then follows), sends execute requests in the order
// cells were run, and routes each message to the cell it belongs to. It knows
// cells only by id; the page owns the cells, their outputs and the display.
//
//   const kc = new KernelClient({
//     projectId, notebookPath,
//     storageKey,                // sessionStorage key: the kernel and which cell
//                                // each execution was for, to reattach after a reload
//     resource: () => name,      // resource class for a new kernel
//     hasCell: (cellId) => bool, // whether the page has that cell
//     onKernel: (kernel) => {},  // kernel state changed ({id, status, queue_position,
//                                // eta_s, stop_reason}, or null)
//     onReconnecting: () => {},  // the event stream dropped; reconnecting
//     onMessage: (cellId, msg, first) => {},
//                                // a Jupyter message (iopub or shell reply) for
//                                // a cell; first: the first of its execution in
//                                // this page load (the journal replays whole
//                                // executions, so the cell's outputs start afresh)
//     onEnd: () => {},           // the kernel died and its journal was sent: no
//                                // cell is running any more
//   });
//   kc.attach()                   reattach to this notebook's kernel of before a
//                                 reload (sessionStorage), if it is still alive
//   await kc.execute(cellId, code, { beforeSend })
//                                 start a kernel if there is none (or it died),
//                                 wait until it is up, await beforeSend() (the page
//                                 saves the notebook: the server checks the cell
//                                 against the working tree), then POST execute;
//                                 resolves with the msg_id; throws an Error whose
//                                 message is for the user
//   await kc.executeWithStdin(cellId, code, { beforeSend })
//                                 as execute, for a cell that calls input(): over the
//                                 kernel's Jupyter channels with allow_stdin; the page
//                                 answers input_request with kc.inputReply(msg, value)
//   await kc.interrupt()          POST interrupt (false without a kernel)
//   await kc.restart()            POST restart (false without a kernel)
//   await kc.switchResource()     stop the kernel (DELETE) and start a new one on
//                                 resource() (the page asked the user first)
//   await kc.request(msgType, content, { timeoutMs })
//                                 a shell request (complete_request, inspect_request...)
//                                 over one long-lived channels WebSocket; resolves with
//                                 the reply's content; throws when there is no running
//                                 kernel (it never starts one), on timeout or close
//   kc.kernel                     the kernel's last known state, or null
//   kc.close()                    the page is left: stop following, timers off
import { api, ApiError } from './api.js';

const enc = encodeURIComponent;
const STARTING = ['queued', 'starting', 'restarting'];
const MAX_PENDING = 5000;
const REQUEST_TIMEOUT_MS = 5000;
const CHANNEL_IDLE_MS = 30000;   // the request socket closes after this long unused
const MAX_OWN = 256;             // request msg_ids remembered, to drop their status messages

export class KernelClient {
  constructor({ projectId, notebookPath, storageKey, resource, hasCell, onKernel, onReconnecting, onMessage, onEnd }) {
    this.projectId = projectId;
    this.notebookPath = notebookPath;
    this.storageKey = storageKey;
    this.resource = resource;
    this.hasCell = hasCell;
    this.onKernel = onKernel;
    this.onReconnecting = onReconnecting;
    this.onMessage = onMessage;
    this.onEnd = onEnd;
    this.kernel = null;            // {id, status, queue_position, eta_s, stop_reason}
    this.events = null;            // the EventSource followed
    this.lastSeq = 0;              // journal seq of the last message handled
    this.parents = new Map();      // execute msg_id -> cell id
    this.seen = new Set();         // msg_ids whose first message arrived in this page load
    this.pending = new Map();      // msg_id -> messages that arrived before its cell was known
    this.pendingCount = 0;
    this.readyWaiters = new Set(); // wake-ups for executions waiting for the kernel to be up
    this.chain = Promise.resolve(); // execute requests go out in the order they were made
    this.closed = false;
    this.chan = null;              // {ws, kid, open: Promise, pending: Map msg_id -> {resolve, reject, timer}}
    this.own = new Set();          // msg_ids of request()s: their status messages are not a cell's
    this.session = crypto.randomUUID().replace(/-/g, '');
  }

  close() {
    this.closed = true;
    this.closeChannel('Left the notebook');
    clearTimeout(this.pollTimer);
    clearTimeout(this.reconnectTimer);
    if (this.events) { this.events.close(); this.events = null; }
  }

  // Reattach to the kernel this notebook had before a reload, replaying its
  // journal from the start.
  async attach() {
    let saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(this.storageKey) || 'null'); } catch { /* none */ }
    if (!saved || !saved.kernel) return;
    for (const [m, cid] of Object.entries(saved.parents || {})) if (this.hasCell(cid)) this.parents.set(m, cid);
    try {
      this.kernel = await api.get(`/api/v1/kernels/${enc(saved.kernel)}`);
      if (this.kernel.status !== 'dead') { this.changed(); this.follow(0); this.poll(); } else this.kernel = null;
    } catch { this.kernel = null; }
  }

  remember() {
    sessionStorage.setItem(this.storageKey, JSON.stringify({ kernel: this.kernel && this.kernel.id, parents: Object.fromEntries(this.parents) }));
  }

  // The kernel's state changed: wake the waiting executions, tell the page.
  changed() {
    const ws = [...this.readyWaiters];
    this.readyWaiters.clear();
    ws.forEach((w) => w());
    this.onKernel(this.kernel);
  }

  // The server takes code only once the kernel process is up (queued or
  // starting answers 409), so an execution on a new kernel waits here until
  // the kernel says idle or busy (over SSE, or seen by poll), and fails if it
  // dies first.
  async waitReady(k) {
    for (;;) {
      if (this.closed) throw new Error('Left the notebook');
      if (this.kernel !== k && !(this.kernel && this.kernel.id === k.id)) throw new Error('The kernel was replaced');
      const cur = this.kernel;
      if (cur.status === 'idle' || cur.status === 'busy') return cur;
      if (cur.status === 'dead') throw new Error(`The kernel stopped before it was ready${cur.stop_reason ? ` (${cur.stop_reason})` : ''}`);
      if (!this.pollTimer) this.poll();
      await new Promise((res) => {
        const t = setTimeout(() => { this.readyWaiters.delete(wake); res(); }, 2000);
        const wake = () => { clearTimeout(t); res(); };
        this.readyWaiters.add(wake);
      });
    }
  }

  // The kernel, started (POST /api/v1/kernels) when there is none or it died.
  async ensure() {
    if (this.kernel && this.kernel.status !== 'dead') return this.kernel;
    this.kernel = await api.post('/api/v1/kernels', { project_id: this.projectId, resource: this.resource() }, { headers: { 'Idempotency-Key': crypto.randomUUID() } });
    this.lastSeq = 0;   // a new kernel's journal starts again at 1
    this.changed();
    this.remember();
    this.follow(0);
    this.poll();
    return this.kernel;
  }

  // While queued, starting or restarting, poll the kernel each second (for
  // position and ETA, and in case the event stream is late).
  poll() {
    clearTimeout(this.pollTimer);
    this.pollTimer = null;
    if (this.closed || !this.kernel || !STARTING.includes(this.kernel.status)) return;
    const k = this.kernel;
    this.pollTimer = setTimeout(async () => {
      try {
        const fresh = await api.get(`/api/v1/kernels/${enc(k.id)}`);
        // Keep whatever newer state the event stream gave meanwhile.
        if (this.kernel && this.kernel.id === fresh.id && (STARTING.includes(this.kernel.status) || fresh.status === 'dead')) {
          Object.assign(this.kernel, fresh);
          this.changed();
        }
      } catch { /* retry */ }
      this.pollTimer = null;
      if (this.kernel === k) this.poll();
    }, 1000);
  }

  // Subscribe to the kernel's messages from `after`: the server replays its
  // journal, then follows. On an error the client reconnects from the last
  // message seen, whatever the browser would resend.
  follow(after) {
    if (this.events) this.events.close();
    const url = `/api/v1/kernels/${enc(this.kernel.id)}/events?after=${after}`;
    const es = new EventSource(url, { withCredentials: true });
    this.events = es;
    es.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }   // a comment or keep-alive
      // A message comes bare (with `seq`) or wrapped as {seq, msg}; the SSE id is the seq too.
      const seq = typeof m.seq === 'number' ? m.seq : Number(ev.lastEventId) || 0;
      if (seq) { if (seq <= this.lastSeq) return; this.lastSeq = seq; }
      this.route(m.msg && typeof m.msg === 'object' ? m.msg : m);
    };
    // The kernel is dead and the journal was sent: the stream ends for good.
    es.addEventListener('end', (ev) => {
      es.close();
      if (this.events !== es) return;
      this.events = null;
      let info = {};
      try { info = JSON.parse(ev.data) || {}; } catch { /* keep {} */ }
      if (this.kernel) {
        this.kernel.status = 'dead';
        if (info.stop_reason) this.kernel.stop_reason = info.stop_reason;
        this.changed();
      }
      this.onEnd();
      this.remember();
    });
    es.onerror = () => {
      es.close();
      if (this.events !== es || !this.kernel) return;
      this.onReconnecting();
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = setTimeout(() => { if (this.events === es) this.follow(this.lastSeq); }, 1000);
    };
  }

  // One message: kernel state to the kernel, the rest to its cell (by the
  // execution it answers, else by the cell id it names).
  route(msg) {
    const type = msg.msg_type || msg.header?.msg_type;
    const content = msg.content || {};
    const parent = msg.parent_header?.msg_id;
    if (type === 'status' && this.kernel) {
      this.kernel.status = content.execution_state === 'busy' ? 'busy' : content.execution_state === 'idle' ? 'idle' : content.execution_state || this.kernel.status;
      this.changed();
    }
    if (type === 'kernel_status' && this.kernel) { Object.assign(this.kernel, content); this.changed(); return; }
    // A completion's or inspection's busy/idle and reply are no cell's (the
    // journal replays them after a reload too, when `own` no longer knows them).
    if (parent && this.own.has(parent)) return;
    const ptype = msg.parent_header?.msg_type;
    if (ptype && ptype !== 'execute_request' && type !== 'input_request') return;
    let cellId = parent && this.parents.get(parent);
    const cid = msg.cell_id || msg.metadata?.cell_id || msg.parent_header?.cell_id;
    if (!cellId && cid && this.hasCell(cid)) cellId = cid;
    if (!cellId) {
      // Messages can outrun the execute reply that tells us their msg_id:
      // keep them until execute() learns which cell they belong to.
      if (parent && this.pendingCount < MAX_PENDING) {
        if (!this.pending.has(parent)) this.pending.set(parent, []);
        this.pending.get(parent).push(msg);
        this.pendingCount++;
      }
      return;
    }
    let first = false;
    if (parent && !this.seen.has(parent)) {
      this.seen.add(parent);
      this.parents.set(parent, cellId);
      first = true;
    }
    this.onMessage(cellId, msg, first);
  }

  async execute(cellId, code, { beforeSend } = {}) {
    const prev = this.chain;
    let done;
    this.chain = new Promise((r) => { done = r; });
    try {
      await prev;
      const k = await this.waitReady(await this.ensure());
      if (beforeSend) await beforeSend();
      const r = await api.post(`/api/v1/kernels/${enc(k.id)}/execute`, { code, cell_id: cellId, notebook_path: this.notebookPath });
      this.parents.set(r.msg_id, cellId);
      this.remember();
      const early = this.pending.get(r.msg_id);
      if (early) { this.pending.delete(r.msg_id); this.pendingCount -= early.length; early.forEach((m) => this.route(m)); }
      return r.msg_id;
    } finally { done(); }
  }

  async interrupt() {
    if (!this.kernel) return false;
    await api.post(`/api/v1/kernels/${enc(this.kernel.id)}/interrupt`);
    return true;
  }

  // input(): the REST execute sends allow_stdin false, so a cell that reads
  // stdin goes over the kernel's Jupyter channels (/api/kernels/{id}/channels,
  // the same kernel) with allow_stdin true; its outputs still arrive over
  // the event stream (the journal has every message), and an input_request
  // shows under the cell (the page calls inputReply with what was typed).
  async executeWithStdin(cellId, code, { beforeSend } = {}) {
    const prev = this.chain;
    let done;
    this.chain = new Promise((r) => { done = r; });
    try {
      await prev;
      const k = await this.waitReady(await this.ensure());
      if (beforeSend) await beforeSend();
      const msgId = crypto.randomUUID().replace(/-/g, '');
      const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/kernels/${enc(k.id)}/channels`;
      const ws = new WebSocket(url);
      await new Promise((res, rej) => { ws.onopen = res; ws.onerror = () => rej(new Error('Could not open the kernel channel for input()')); });
      this.stdinWs = ws;
      ws.onmessage = (ev) => {
        let m;
        try { m = JSON.parse(ev.data); } catch { return; }
        const type = m.msg_type || m.header?.msg_type;
        // The event stream may carry it too: the page shows one box per request.
        if (type === 'input_request' && m.parent_header?.msg_id === msgId) this.route(m);
        if (type === 'execute_reply' && m.parent_header?.msg_id === msgId) { ws.close(); if (this.stdinWs === ws) this.stdinWs = null; }
      };
      this.parents.set(msgId, cellId);
      this.remember();
      ws.send(JSON.stringify({ channel: 'shell', header: { msg_id: msgId, msg_type: 'execute_request', username: 'web', session: msgId, date: new Date().toISOString(), version: '5.3' },
        parent_header: {}, metadata: { cellId }, content: { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: true, stop_on_error: true } }));
      return msgId;
    } finally { done(); }
  }

  // A shell request and its reply, over one channels WebSocket per kernel,
  // opened on first use and closed after CHANNEL_IDLE_MS without requests
  // (it carries every message the kernel sends, which the event stream
  // already brings to the page). Rejects without a running kernel: code
  // intelligence must never start one.
  async request(msgType, content, { timeoutMs = REQUEST_TIMEOUT_MS } = {}) {
    const k = this.kernel;
    if (this.closed || !k || !['idle', 'busy'].includes(k.status)) throw new Error('No running kernel');
    const chan = this.channel(k.id);
    await chan.open;
    if (this.chan !== chan || chan.ws.readyState !== WebSocket.OPEN) throw new Error('The kernel channel closed');
    const msgId = crypto.randomUUID().replace(/-/g, '');
    this.own.add(msgId);
    if (this.own.size > MAX_OWN) this.own.delete(this.own.values().next().value);
    clearTimeout(chan.idleTimer);
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(entry.timer);
        chan.pending.delete(msgId);
        if (!chan.pending.size) chan.idleTimer = setTimeout(() => { if (this.chan === chan) this.closeChannel('idle'); }, CHANNEL_IDLE_MS);
      };
      const entry = {
        resolve: (c) => { done(); resolve(c); },
        reject: (e) => { done(); reject(e); },
        timer: setTimeout(() => entry.reject(new Error(`The kernel did not answer ${msgType} in time`)), timeoutMs),
      };
      chan.pending.set(msgId, entry);
      try {
        chan.ws.send(JSON.stringify({ channel: 'shell', header: { msg_id: msgId, msg_type: msgType, username: 'web', session: this.session, date: new Date().toISOString(), version: '5.3' },
          parent_header: {}, metadata: {}, content }));
      } catch (e) { entry.reject(e); }
    });
  }

  // The channels socket for kernel `kid`, opened if there is none (or it is
  // another kernel's, or it closed).
  channel(kid) {
    if (this.chan && this.chan.kid === kid && this.chan.ws.readyState <= WebSocket.OPEN) return this.chan;
    this.closeChannel('The kernel changed');
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/kernels/${enc(kid)}/channels`;
    const ws = new WebSocket(url);
    const chan = { ws, kid, pending: new Map(), idleTimer: null };
    chan.open = new Promise((res, rej) => {
      ws.onopen = res;
      ws.onerror = () => rej(new Error('Could not open the kernel channel'));
    });
    chan.open.catch(() => {});
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      const p = chan.pending.get(m.parent_header?.msg_id);
      const type = m.msg_type || m.header?.msg_type || '';
      if (p && type.endsWith('_reply')) p.resolve(m.content || {});
    };
    ws.onclose = () => { if (this.chan === chan) this.closeChannel('The kernel channel closed'); };
    this.chan = chan;
    return chan;
  }

  closeChannel(why) {
    const chan = this.chan;
    if (!chan) return;
    this.chan = null;
    clearTimeout(chan.idleTimer);
    for (const p of [...chan.pending.values()]) p.reject(new Error(why));
    try { chan.ws.close(); } catch { /* already closed */ }
  }

  // Answer the kernel's input_request `req` (the message) with `value`.
  inputReply(req, value) {
    const ws = this.stdinWs;
    if (!ws || ws.readyState !== WebSocket.OPEN) throw new Error('The input request is gone (the kernel channel closed)');
    ws.send(JSON.stringify({ channel: 'stdin', header: { msg_id: crypto.randomUUID().replace(/-/g, ''), msg_type: 'input_reply', username: 'web', session: req.header?.session || '', date: new Date().toISOString(), version: '5.3' },
      parent_header: req.header || {}, metadata: {}, content: { value } }));
  }

  // A kernel keeps its resource class: to change it, stop this kernel and
  // start a new one (its journal starts again at seq 1).
  async switchResource() {
    const old = this.kernel;
    if (old && old.status !== 'dead') {
      try { await api.del(`/api/v1/kernels/${enc(old.id)}`); }
      catch (e) { if (!(e instanceof ApiError && e.status === 404)) throw e; }
    }
    if (this.events) { this.events.close(); this.events = null; }
    clearTimeout(this.pollTimer);
    this.pollTimer = null;
    this.kernel = null;
    this.parents.clear();
    this.seen.clear();
    this.pending.clear();
    this.pendingCount = 0;
    this.changed();
    this.onEnd();
    this.remember();
    await this.ensure();
  }

  async restart() {
    if (!this.kernel) return false;
    this.kernel = await api.post(`/api/v1/kernels/${enc(this.kernel.id)}/restart`) || this.kernel;
    this.changed();
    this.poll();
    return true;
  }
}
