// Live resource meters of the notebook's kernel, in its toolbar: CPU (% of
// one core, a bar against the kernel's CPU limit), RAM (used of the limit,
// a bar), each GPU when the kernel has one (busy % and memory), and the
// coins charged so far ("free" on a class that is never charged). From GET
// /api/v1/kernels/{id}/usage every 2.5 s while the kernel has a process and
// the tab is visible; nothing is fetched while hidden or without a kernel.
// A figure the server cannot measure (no cgroup on the host, no NVML) shows
// "n/a" with a tooltip that says why: never a made-up number.
import { api, ApiError } from './api.js';
import { h, clear, coins } from './ui.js';
import './meters.css';

const PERIOD = 2500;
const RUNNING = new Set(['starting', 'idle', 'busy']);
const enc = encodeURIComponent;

const GIB = 1073741824;
const gib = (n) => (n / GIB).toFixed(1);
const pct = (n) => `${Math.round(n)}%`;
const cores = (c) => `${Number.isInteger(c) ? c : c.toFixed(1)} ${c === 1 ? 'core' : 'cores'}`;

// "1.2 / 4.0 GiB", or MiB for kernels whose limit is under 1 GiB.
export function memoryText(used, limit) {
  if (limit !== null && limit !== undefined && limit < GIB) {
    const mib = (n) => Math.round(n / 1048576);
    return `${mib(used)} / ${mib(limit)} MiB`;
  }
  return limit ? `${gib(used)} / ${gib(limit)} GiB` : `${gib(used)} GiB`;
}

function bar() {
  const fill = h('span', { class: 'meter-fill' });
  return { el: h('span', { class: 'meter-bar', 'aria-hidden': 'true' }, fill), fill };
}

function setBar(b, frac) {
  const f = Math.max(0, Math.min(1, frac));
  b.fill.style.width = `${(f * 100).toFixed(1)}%`;
  b.el.classList.toggle('high', f >= 0.9);
}

// One gauge: a label, a bar (optional), the figure.
function gauge(label, testid, withBar = true) {
  const value = h('span', { class: 'meter-value' }, '…');
  const b = withBar ? bar() : null;
  const el = h('span', { class: 'meter', 'data-testid': testid, tabindex: '0' }, h('span', { class: 'meter-label' }, label), b && b.el, value);
  return { el, value, bar: b };
}

// How the server's usage reads in the gauges (exported for the kernels panel).
export function usageTexts(u) {
  const out = {};
  if (u.cpu_percent === null || u.cpu_percent === undefined) {
    out.cpu = { text: 'n/a', title: 'CPU use is not measured: the server runs kernels without cgroups on this host' };
  } else {
    const limit = u.cpu_limit_cores;
    out.cpu = {
      text: pct(u.cpu_percent),
      frac: limit ? u.cpu_percent / (limit * 100) : null,
      title: `CPU: ${pct(u.cpu_percent)} of one core${u.cpu_window_ms ? ` over the last ${(u.cpu_window_ms / 1000).toFixed(1)} s` : ''}${limit ? ` (limit ${cores(limit)}: 100% is one core busy)` : ''}`,
    };
  }
  if (u.memory_bytes === null || u.memory_bytes === undefined) {
    out.ram = { text: 'n/a', title: 'Memory use is not measured: the server runs kernels without cgroups on this host' };
  } else {
    const lim = u.memory_limit_bytes;
    out.ram = {
      text: memoryText(u.memory_bytes, lim),
      frac: lim ? u.memory_bytes / lim : null,
      title: `Memory the kernel uses now: ${gib(u.memory_bytes)} GiB${lim ? ` of its ${gib(lim)} GiB limit (past it, the kernel is stopped: out of memory)` : ''}${u.memory_peak_bytes ? `; peak ${gib(u.memory_peak_bytes)} GiB` : ''}`,
    };
  }
  out.gpus = (u.gpus || []).map((g) => {
    const util = g.util_percent === null || g.util_percent === undefined ? null : g.util_percent;
    const mem = g.memory_bytes === null || g.memory_bytes === undefined ? null : g.memory_bytes;
    if (util === null && mem === null) return { text: 'n/a', title: `GPU ${g.index}: not measured (no NVIDIA management library on the server, or a simulated GPU)` };
    const parts = [];
    if (util !== null) parts.push(pct(util));
    if (mem !== null) parts.push(`${Math.round(mem / GIB)} / ${Math.round(g.memory_total_bytes / GIB)} GiB`);
    return {
      text: parts.join(' · '), frac: util !== null ? util / 100 : null,
      title: `GPU ${g.index}: ${util !== null ? `busy ${pct(util)} of the time` : 'busy time unknown'}${mem !== null ? `, ${gib(mem)} of ${gib(g.memory_total_bytes)} GiB of its memory in use` : ''}`,
    };
  });
  const every = u.meter_interval_ms ? `every ${Math.round(u.meter_interval_ms / 1000)} s` : 'as it runs';
  out.cost = u.free
    ? { text: 'free', title: 'This resource class is free for your tier: the kernel costs nothing' }
    : { text: coins(u.mcoins_so_far || 0), title: `Coins charged for this kernel so far (metered ${every}; ${coins(u.price_mcoins_per_hour)} an hour)` };
  return out;
}

export function kernelMeters(nb) {
  const cpu = gauge('CPU', 'meter-cpu');
  const ram = gauge('RAM', 'meter-ram');
  const gpus = h('span', { class: 'meter-gpus' });
  const cost = gauge('', 'meter-cost', false);
  const el = h('span', { class: 'meters', 'data-testid': 'meters', role: 'group', 'aria-label': 'Kernel resources', hidden: true },
    cpu.el, ram.el, gpus, cost.el);
  let id = null, timer = null, running = false, seen = false;

  function show(g, t) {
    g.value.textContent = t.text;
    g.el.title = t.title;
    g.el.classList.toggle('na', t.text === 'n/a');
    if (g.bar) {
      g.bar.el.hidden = t.frac === null || t.frac === undefined;
      if (!g.bar.el.hidden) setBar(g.bar, t.frac);
    }
  }

  function render(u) {
    const t = usageTexts(u);
    show(cpu, t.cpu);
    show(ram, t.ram);
    clear(gpus, t.gpus.map((g, i) => {
      const x = gauge(t.gpus.length > 1 ? `GPU${i}` : 'GPU', 'meter-gpu');
      show(x, g);
      return x.el;
    }));
    show(cost, t.cost);
    el.dataset.at = String(u.at_ms || '');
    el.hidden = false;
  }

  const hidden = () => document.visibilityState === 'hidden';
  function schedule(ms) { clearTimeout(timer); timer = id && !hidden() ? setTimeout(tick, ms) : null; }

  async function tick() {
    timer = null;
    if (el.isConnected) seen = true;
    else if (seen) { dispose(); return; }   // the page went away
    if (!id || running || hidden()) return;
    running = true;
    const want = id;
    try {
      const u = await api.get(`/api/v1/kernels/${enc(want)}/usage`);
      if (want === id) render(u);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404 && want === id) { el.hidden = true; }
    } finally { running = false; }
    schedule(PERIOD);
  }

  function follow(k) {
    const next = k && RUNNING.has(k.status) ? k.id : null;
    if (next === id) return;
    id = next;
    if (!id) { clearTimeout(timer); timer = null; el.hidden = true; return; }
    schedule(0);
  }

  const onKernel = (ev) => follow(ev.detail);
  const onVis = () => { if (!hidden() && id && !timer && !running) schedule(0); };
  function dispose() {
    clearTimeout(timer);
    id = null;
    nb.events.removeEventListener('kernel', onKernel);
    document.removeEventListener('visibilitychange', onVis);
  }
  nb.events.addEventListener('kernel', onKernel);
  document.addEventListener('visibilitychange', onVis);
  follow(nb.kc && nb.kc.kernel);
  return el;
}
