// Widgets more than one page shows: the resource picker (jobs and the
// notebook's kernel), the running-kernels panel (notebook, project and
// account pages) and the labelled figure of the stats rows (account, admin,
// a job). Generic DOM helpers are in ui.js.
import { api, ApiError, listAll } from './api.js';
import { h, clear, coins, duration, busy, toast, modal, visiblePoll } from './ui.js';
import { app } from './app.js';
import { usageTexts } from './meters.js';

const enc = encodeURIComponent;

// "1 kernel", "2 kernels".
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

// GET /api/v1/resources (items or a bare array); [] when the route is missing.
export async function loadResources() {
  try { const r = await api.get('/api/v1/resources'); return r.items || r; }
  catch (e) { if (!(e instanceof ApiError && e.status === 404)) throw e; return []; }
}

// The tiers' daily free allowance per class (GET /api/v1/tiers), when the
// server tells it: {class: ms or -1 (always free)} for the user's tier.
async function freeAllowance() {
  try {
    const r = await api.get('/api/v1/tiers');
    const tiers = r.items || r;
    const t = Array.isArray(tiers) && app.me ? tiers.find((x) => x.name === app.me.tier) : null;
    return (t && t.free_ms_per_day && typeof t.free_ms_per_day === 'object') ? t.free_ms_per_day : {};
  } catch { return {}; }
}

// Whether the user can run class `r`, and why not: a GPU class on a host
// with no GPU of it (capacity 0), a class the user's tier may not use.
export function resourceBlock(r, tier) {
  if (r.gpus && !r.capacity) return 'no such GPU on this server';
  if (tier && Array.isArray(r.tiers) && r.tiers.length && !r.tiers.includes(tier)) return `not in the ${tier} tier (${r.tiers.join(', ')} only)`;
  return null;
}

// How a class is priced: nothing for a class that is never charged (price 0,
// or the tier's allowance for it is unlimited), else the price an hour.
export function priceLabel(r, free = {}) {
  if (!r.price_mcoins_per_hour || free[r.name] === -1 || r.free_ms_per_day === -1) return 'free';
  return `${coins(r.price_mcoins_per_hour)}/h`;
}

// A <select> of the resource classes with price and load; just cpu-basic when
// the server lists none. GPU classes the host lacks are left out; classes
// the user's tier may not use are disabled with the reason.
export async function resourcePicker(label = 'Resource') {
  const [items, free] = await Promise.all([loadResources(), freeAllowance()]);
  const tier = app.me && app.me.tier;
  const shown = items.filter((r) => !(r.gpus && !r.capacity));
  const sel = h('select', { 'aria-label': label, 'data-testid': 'resource-picker' }, shown.map((r) => {
    const why = resourceBlock(r, tier);
    return h('option', { value: r.name, disabled: !!why, title: why || null, 'data-block': why || null },
      `${r.name} · ${plural(r.cpus, 'CPU')}${r.gpus ? ` · ${r.gpu_model || 'GPU'}` : ''} · ${priceLabel(r, free)} · ${r.in_use}/${r.capacity} busy${r.queued ? `, ${r.queued} queued` : ''}${why ? ` — ${why}` : ''}`);
  }));
  if (!shown.length) sel.append(h('option', { value: 'cpu-basic' }, 'cpu-basic'));
  const first = [...sel.options].find((o) => !o.disabled);
  if (first) sel.value = first.value;
  return sel;
}

// One figure with its label (value: text, a number or an element).
export function stat(label, value, testid) {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value', 'data-testid': testid }, value));
}

// The running-kernels panel (as JupyterLab's): every live kernel of the user
// with its project and notebook, resource class, state, uptime, CPU and RAM
// now and the coins charged so far (GET /api/v1/kernels/{id}/usage; "free"
// for a class never charged; "n/a" where the host does not measure), and
// Stop, Restart and "Stop all". `projectId` limits it to one project.
// Returns {el, refresh, stop}: the panel polls while shown; call stop() when
// it goes away.
export function kernelsPanel({ projectId = null, onChange = () => {} } = {}) {
  const body = h('div', { 'data-testid': 'kernels-body' }, h('p', { class: 'muted' }, 'Loading kernels…'));
  const stopAll = h('button', { class: 'small danger', 'data-testid': 'kernels-stop-all', onclick: () => busy(stopAll, async () => {
    const live = await liveKernels();
    if (!live.length) return;
    for (const k of live) await api.del(`/api/v1/kernels/${enc(k.id)}`).catch((e) => { if (!(e instanceof ApiError && e.status === 404)) throw e; });
    toast(`Stopped ${plural(live.length, 'kernel')}`);
    onChange();
    await refresh();
  }) }, 'Stop all');
  const el = h('section', { class: 'card kernels-panel', 'data-testid': 'kernels-panel' },
    h('div', { class: 'page-head' }, h('h2', null, projectId ? 'Running kernels of this project' : 'Running kernels'), stopAll), body);
  let projects = null, resources = null, free = {};
  async function liveKernels() {
    const items = await listAll('/api/v1/kernels', {}, 500);
    return items.filter((k) => k.status !== 'dead' && (!projectId || String(k.project_id) === String(projectId)));
  }
  async function refresh() {
    if (!projects) {
      const [ps, rs, fr] = await Promise.all([listAll('/api/v1/projects').catch(() => []), loadResources().catch(() => []), freeAllowance()]);
      projects = new Map(ps.map((p) => [String(p.id), p.name]));
      resources = new Map(rs.map((r) => [r.name, r]));
      free = fr;
    }
    const live = await liveKernels();
    stopAll.disabled = !live.length;
    if (!live.length) { clear(body, h('p', { class: 'muted', 'data-testid': 'kernels-none' }, 'No kernel is running.')); return; }
    const now = Date.now();
    // one usage reading per kernel, in parallel (the server caches each for 1 s)
    const usage = await Promise.all(live.map((k) => (k.status === 'queued' ? null
      : api.get(`/api/v1/kernels/${enc(k.id)}/usage`).catch(() => null))));
    const rows = live.map((k, i) => {
      const u = usage[i], t = u ? usageTexts(u) : null;
      const since = Date.parse(k.started_at || k.created_at || '');
      const up = Number.isFinite(since) ? Math.max(0, now - since) : null;
      const r = resources.get(k.resource);
      const price = r ? priceLabel(r, free) : '—';
      // the metering's figure when the server gives it, else the estimate from the price
      const cost = t ? t.cost.text : !r ? '—' : price === 'free' ? 'free' : up === null ? '—' : `≈ ${coins(Math.round(r.price_mcoins_per_hour * up / 3600000))}`;
      const fig = (x, testid) => h('td', { class: 'num', 'data-testid': testid, title: x ? x.title : 'not running' }, x ? x.text : '—');
      const stop = h('button', { class: 'small danger', 'data-testid': 'kernel-stop', onclick: () => busy(stop, async () => {
        await api.del(`/api/v1/kernels/${enc(k.id)}`);
        toast('Kernel stopped');
        onChange();
        await refresh();
      }) }, 'Stop');
      const restart = h('button', { class: 'small', 'data-testid': 'kernel-restart', onclick: () => busy(restart, async () => {
        await api.post(`/api/v1/kernels/${enc(k.id)}/restart`);
        toast('Kernel restarted');
        await refresh();
      }) }, 'Restart');
      const proj = projects.get(String(k.project_id)) || k.project_id;
      return h('tr', { 'data-kernel-id': k.id },
        h('td', null, h('a', { href: `/projects/${enc(k.project_id)}` }, proj), k.notebook_path ? ` / ${k.notebook_path}` : ''),
        h('td', null, k.resource || '—'), h('td', { 'data-testid': 'kernel-state' }, k.status),
        h('td', null, up === null ? '—' : duration(up)), fig(t && t.cpu, 'kernel-cpu'), fig(t && t.ram, 'kernel-ram'),
        h('td', { class: 'num', 'data-testid': 'kernel-cost', title: t ? t.cost.title : null }, cost),
        h('td', { class: 'actions' }, restart, stop));
    });
    // The user's terminals (each a shell in one of these kernels' sandboxes).
    const terms = (await api.get('/api/terminals').catch(() => []))
      .filter((x) => x.eddy && live.some((k) => String(k.id) === String(x.eddy.kernel_id)));
    const termRows = terms.map((x) => {
      const k = live.find((kk) => String(kk.id) === String(x.eddy.kernel_id));
      const close = h('button', { class: 'small danger', 'data-testid': 'terminal-stop', onclick: () => busy(close, async () => {
        await api.del(`/api/v1/kernels/${enc(k.id)}/terminals/${enc(x.name)}`).catch((e) => { if (!(e instanceof ApiError && e.status === 404)) throw e; });
        toast('Terminal closed');
        await refresh();
      }) }, 'Close');
      const idle = Date.parse(x.last_activity || '');
      return h('tr', { 'data-testid': 'terminal-row', 'data-terminal': x.name },
        h('td', null, `Terminal ${x.name}`), h('td', null, h('a', { href: `/projects/${enc(k.project_id)}` }, projects.get(String(k.project_id)) || k.project_id)),
        h('td', null, Number.isFinite(idle) ? `active ${duration(Math.max(0, now - idle))} ago` : '—'), h('td', { class: 'actions' }, close));
    });
    clear(body, h('table', { class: 'table', 'data-testid': 'kernels' },
      h('thead', null, h('tr', null, ['Project / notebook', 'Resource', 'State', 'Uptime', 'CPU', 'RAM', 'Cost so far', ''].map((x) => h('th', null, x)))),
      h('tbody', null, rows)),
    termRows.length ? h('table', { class: 'table', 'data-testid': 'terminals' },
      h('thead', null, h('tr', null, ['Terminal', 'Project', 'Last activity', ''].map((x) => h('th', null, x)))),
      h('tbody', null, termRows)) : []);
  }
  refresh().catch((e) => clear(body, h('p', { class: 'error-box' }, e.message)));
  const stopPoll = visiblePoll(refresh, { period: 3000 });
  return { el, refresh, stop: stopPoll };
}

// The panel in a dialog (the notebook's "Kernels" button, and the offer when
// a start is refused for the tier's kernel limit).
export async function kernelsDialog({ onChange } = {}) {
  const p = kernelsPanel({ onChange });
  try { await modal({ title: 'Running kernels', testid: 'kernels-dialog', body: p.el, actions: [], cancelLabel: 'Close' }); }
  finally { p.stop(); }
}

// Whether an error is the tier's limit on running kernels.
export function isKernelLimit(e) {
  return e instanceof ApiError && [402, 403, 409, 429].includes(e.status) && /kernel/i.test(e.message) && /(allow|limit|stop one)/i.test(e.message);
}
