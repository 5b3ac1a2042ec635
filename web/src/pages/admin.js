// Admin dashboard: overview (devices, running work, queue, utilisation), users
// (tier, role, suspension, coin grants), tiers and prices, settings, ledger
// check and the audit log.
import { api, listAll, ApiError } from '../api.js';
import { h, table, busy, toast, coins, duration, when, unavailable, errorBox } from '../ui.js';
import { stat } from '../widgets.js';
import { barChart } from '../chart.js';

const enc = encodeURIComponent;

async function section(title, fn, what) {
  const box = h('section', { class: 'card' }, h('h2', null, title));
  try { await fn(box); }
  catch (e) { box.append(e instanceof ApiError && e.status === 404 ? unavailable(what || title) : errorBox(e)); }
  return box;
}

export async function adminPage() {
  const sections = await Promise.all([
    section('Overview', overview, 'Admin overview (devices, running work, queue)'),
    section('Users', users),
    section('Tiers', tiers),
    section('Resources and prices', resources, 'Resource classes'),
    section('Settings and ledger', settings),
    section('Audit log', audit),
  ]);
  return h('div', { class: 'page' }, h('h1', null, 'Admin'), sections);
}

async function overview(box) {
  const o = await api.get('/api/v1/admin/overview');
  const jobRow = (j) => h('tr', null, h('td', null, h('a', { href: `/jobs/${j.id}` }, `#${j.id}`)), h('td', null, j.status), h('td', null, j.entry), h('td', null, j.resource),
    h('td', null, j.queue_position ?? ''), h('td', null, j.eta_s >= 0 ? duration(j.eta_s * 1000) : ''), h('td', null, when(j.created_at)));
  box.append(
    h('div', { class: 'stats' },
      stat('Users', o.users), stat('Running jobs', o.jobs?.running ?? 0), stat('Queued jobs', o.jobs?.queued ?? 0),
      stat('GPUs found', o.devices?.gpus_found ?? 0), stat('GPUs simulated', o.devices?.gpus_simulated ?? 0),
      stat('Utilisation', `${Math.round((o.utilisation || 0) * 100)} %`), stat('Charged today', coins(o.charged_today_mcoins))),
    (o.resources || []).length ? barChart(o.resources.map((r) => ({ label: r.name, value: (r.utilisation || 0) * 100 })), { title: 'Utilisation per resource class', unit: '%', height: 140 }) : null,
    h('h3', null, 'Devices and resource classes'),
    table(['Class', 'Capacity', 'In use', 'Queued', 'Utilisation'], (o.resources || []).map((r) => h('tr', null, h('td', null, r.name), h('td', null, r.capacity), h('td', null, r.in_use), h('td', null, r.queued), h('td', null, `${Math.round((r.utilisation || 0) * 100)} %`)))),
    h('h3', null, 'Running'), table(['Job', 'Status', 'Entry', 'Resource', 'Queue', 'ETA', 'Submitted'], (o.running || []).map(jobRow)),
    h('h3', null, 'Queue'), table(['Job', 'Status', 'Entry', 'Resource', 'Position', 'ETA', 'Submitted'], (o.queue || []).map(jobRow)));
  // Every user's kernels: GET /api/v1/kernels lists only the caller's, but
  // each kernel is scheduled as a job with the entry "@kernel", and the
  // overview's running work and queue hold every user's jobs.
  const kernels = [...(o.running || []), ...(o.queue || [])].filter((j) => j.entry === '@kernel');
  box.append(h('h3', null, 'Kernels (all users)'), table(['Job', 'Status', 'Project', 'Resource', 'Started'], kernels.map((k) => h('tr', { 'data-project': k.project_id },
    h('td', null, `#${k.id}`), h('td', null, k.status), h('td', null, k.project_id || ''), h('td', null, k.resource || ''), h('td', null, when(k.started_at || k.created_at)))), { 'data-testid': 'admin-kernels' }));
}

async function users(box) {
  const list = await listAll('/api/v1/admin/users');
  const tierNames = await api.get('/api/v1/tiers').then((r) => (r.items || r).map((t) => t.name)).catch(() => ['free', 'pro', 'premium']);
  const rows = list.map((u) => {
    const tier = h('select', { 'aria-label': `Tier of ${u.username}` }, tierNames.map((t) => h('option', { value: t }, t)));
    tier.value = u.tier;
    const role = h('select', { 'aria-label': `Role of ${u.username}` }, ['user', 'admin'].map((r) => h('option', { value: r }, r)));
    role.value = u.role;
    const susp = h('input', { type: 'checkbox', checked: !!u.suspended, 'aria-label': `Suspend ${u.username}` });
    const patch = (body) => busy(null, async () => { await api.patch(`/api/v1/admin/users/${enc(u.id)}`, body); toast(`Updated ${u.username}`); });
    tier.addEventListener('change', () => patch({ tier: tier.value }));
    role.addEventListener('change', () => patch({ role: role.value }));
    susp.addEventListener('change', () => patch({ suspended: susp.checked }));
    const amount = h('input', { type: 'number', step: '0.001', min: '0.001', placeholder: 'A-coins', 'aria-label': `Coins to grant ${u.username}`, style: { width: '7em' } });
    const reason = h('input', { placeholder: 'reason', 'aria-label': `Reason for the grant to ${u.username}`, style: { width: '9em' } });
    const grant = h('button', {
      class: 'small primary', 'data-testid': `grant-${u.username}`,
      onclick: () => busy(grant, async () => {
        const mc = Math.round(Number(amount.value) * 1000);
        if (!(mc > 0)) throw new Error('Enter a positive amount of A-coins');
        await api.post(`/api/v1/admin/users/${enc(u.id)}/grants`, { amount_mcoins: mc, reason: reason.value || 'granted from the admin dashboard' },
          { headers: { 'Idempotency-Key': crypto.randomUUID() } });
        toast(`Granted ${coins(mc)} to ${u.username}`);
        amount.value = ''; reason.value = '';
      }),
    }, 'Grant');
    return h('tr', { 'data-user': u.username }, h('td', null, u.id), h('td', null, u.username), h('td', null, u.email), h('td', null, tier), h('td', null, role),
      h('td', null, h('label', { class: 'check' }, susp, 'suspended')), h('td', { class: 'actions' }, amount, reason, grant), h('td', null, when(u.created_at)));
  });
  box.append(table(['Id', 'User', 'Email', 'Tier', 'Role', 'Suspension', 'Grant coins', 'Created'], rows, { 'data-testid': 'users' }));
}

async function tiers(box) {
  const r = await api.get('/api/v1/tiers');
  const items = r.items || r;
  const num = (v, label) => h('input', { type: 'number', value: v, 'aria-label': label, style: { width: '8em' } });
  box.append(table(['Tier', 'Max kernels', 'GPUs/job', 'Session (min)', 'Idle (min)', 'Free GPU min/day', 'Overdraft (A)', ''], items.map((t) => {
    const f = {
      max_kernels: num(t.max_kernels, `${t.name} max kernels`), max_gpus_per_job: num(t.max_gpus_per_job, `${t.name} GPUs per job`),
      max_session_ms: num(Math.round(t.max_session_ms / 60000), `${t.name} session minutes`), idle_timeout_ms: num(Math.round(t.idle_timeout_ms / 60000), `${t.name} idle minutes`),
      free_gpu_ms_per_day: num(Math.round(t.free_gpu_ms_per_day / 60000), `${t.name} free GPU minutes`), overdraft_mcoins: num(t.overdraft_mcoins / 1000, `${t.name} overdraft`),
    };
    const save = h('button', {
      class: 'small',
      onclick: () => busy(save, async () => {
        await api.put(`/api/v1/admin/tiers/${enc(t.name)}`, {
          max_kernels: Number(f.max_kernels.value), max_gpus_per_job: Number(f.max_gpus_per_job.value),
          max_session_ms: Math.round(Number(f.max_session_ms.value) * 60000), idle_timeout_ms: Math.round(Number(f.idle_timeout_ms.value) * 60000),
          free_gpu_ms_per_day: Math.round(Number(f.free_gpu_ms_per_day.value) * 60000), overdraft_mcoins: Math.round(Number(f.overdraft_mcoins.value) * 1000),
        });
        toast(`Saved tier ${t.name}`);
      }),
    }, 'Save');
    return h('tr', null, h('td', null, t.name), Object.values(f).map((x) => h('td', null, x)), h('td', null, save));
  })));
}

async function resources(box) {
  const r = await api.get('/api/v1/resources');
  const items = r.items || r;
  box.append(table(['Class', 'CPUs', 'Memory', 'GPU', 'Tiers', 'Capacity', 'In use', 'Queued', 'Price (A/hour)', ''], items.map((x) => {
    const price = h('input', { type: 'number', step: '0.001', value: x.price_mcoins_per_hour / 1000, 'aria-label': `${x.name} price per hour`, style: { width: '7em' } });
    const save = h('button', { class: 'small', onclick: () => busy(save, async () => { await api.put(`/api/v1/admin/resources/${enc(x.name)}`, { price_mcoins_per_hour: Math.round(Number(price.value) * 1000) }); toast(`Saved ${x.name}`); }) }, 'Save');
    return h('tr', null, h('td', null, x.name), h('td', null, x.cpus), h('td', null, `${x.memory_mb} MB`), h('td', null, x.gpus ? `${x.gpus}× ${x.gpu_model}${x.simulated ? ' (simulated)' : ''}` : '—'),
      h('td', null, (x.tiers || []).join(', ')), h('td', null, x.capacity), h('td', null, x.in_use), h('td', null, x.queued), h('td', null, price), h('td', null, save));
  })));
}

async function settings(box) {
  const s = await api.get('/api/v1/admin/settings');
  const open = h('input', { type: 'checkbox', checked: !!s.signup_open });
  open.addEventListener('change', () => busy(null, async () => { await api.patch('/api/v1/admin/settings', { signup_open: open.checked }); toast('Saved'); }));
  const out = h('span', { 'aria-live': 'polite' });
  const verify = h('button', {
    onclick: () => busy(verify, async () => {
      const v = await api.get('/api/v1/admin/ledger/verify');
      out.textContent = v.ok ? `Ledger OK: ${v.accounts_checked} accounts checked` : `Ledger mismatches: ${JSON.stringify(v.mismatches)}`;
      out.className = v.ok ? 'ok' : 'neg';
    }),
  }, 'Verify the ledger');
  box.append(h('p', null, h('label', { class: 'check' }, open, 'Open sign-up')), h('p', null, verify, ' ', out));
}

// Who did it, by name: the user of actor_id; with no actor, a sign-up is
// the new user (named by its target "user:ID"), other auth.* events are
// anonymous, and anything else came from the operator's CLI.
export function auditActor(a, names) {
  const user = (id) => names.get(String(id)) || `user #${id}`;
  if (a.actor_id !== null && a.actor_id !== undefined) return user(a.actor_id);
  const m = /^user:(\d+)$/.exec(a.target || '');
  if (a.action === 'auth.signup' && m) return `${user(m[1])} (sign-up)`;
  if (String(a.action).startsWith('auth.')) return 'anonymous';
  return 'operator (CLI)';
}

// A target "user:ID" shows the username too.
function auditTarget(t, names) {
  const m = /^user:(\d+)$/.exec(t || '');
  return m && names.has(m[1]) ? `user:${names.get(m[1])}` : t || '';
}

async function audit(box) {
  const [r, us] = await Promise.all([api.get('/api/v1/admin/audit', { query: { limit: 100 } }), listAll('/api/v1/admin/users').catch(() => [])]);
  const names = new Map(us.map((u) => [String(u.id), u.username]));
  box.append(table(['When', 'Actor', 'Action', 'Target', 'IP', 'Detail'], (r.items || []).map((a) => h('tr', { 'data-action': a.action },
    h('td', null, when(a.at)), h('td', { 'data-testid': 'audit-actor' }, auditActor(a, names)), h('td', null, a.action), h('td', null, auditTarget(a.target, names)), h('td', null, a.ip || ''),
    h('td', null, h('code', { class: 'detail' }, a.detail ? JSON.stringify(a.detail) : '')))), { 'data-testid': 'audit' }));
}
