// Jobs: submit a batch job, list them, and one job's live status, logs,
// artifacts and charge.
import { api, listAll, request, ApiError } from '../api.js';
import { h, clear, table, field, busy, toast, coins, duration, when, bytes, unavailable, download } from '../ui.js';
import { navigate, onLeave } from '../main.js';

const enc = encodeURIComponent;
const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

export async function resourcePicker(label = 'Resource') {
  let items = [];
  try { const r = await api.get('/api/v1/resources'); items = r.items || r; }
  catch (e) { if (!(e instanceof ApiError && e.status === 404)) throw e; }
  const sel = h('select', { 'aria-label': label }, items.map((r) => h('option', { value: r.name },
    `${r.name} · ${r.cpus} CPU${r.gpus ? ` · ${r.gpu_model}` : ''} · ${coins(r.price_mcoins_per_hour)}/h · ${r.in_use}/${r.capacity} busy${r.queued ? `, ${r.queued} queued` : ''}`)));
  if (!items.length) sel.append(h('option', { value: 'cpu-basic' }, 'cpu-basic'));
  return sel;
}

export async function jobsPage() {
  let jobs;
  try { jobs = await listAll('/api/v1/jobs', {}, 200); }
  catch (e) {
    if (e instanceof ApiError && e.status === 404) return h('div', { class: 'page' }, h('h1', null, 'Jobs'), unavailable('Jobs'));
    throw e;
  }
  const projects = await listAll('/api/v1/projects');
  const proj = h('select', { 'aria-label': 'Project' }, projects.map((p) => h('option', { value: p.id }, p.name)));
  const entry = h('input', { placeholder: 'train.py or notebook.ipynb', required: true, 'aria-label': 'Entry file' });
  const args = h('input', { placeholder: 'arguments (space separated)', 'aria-label': 'Arguments' });
  const res = await resourcePicker();
  const maxrt = h('input', { type: 'number', min: 1, placeholder: 'max seconds', 'aria-label': 'Maximum runtime in seconds', style: { width: '8em' } });
  const form = h('form', {
    class: 'inline-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      const body = { project_id: proj.value, entry: entry.value.trim(), resource: res.value };
      if (args.value.trim()) body.args = args.value.trim().split(/\s+/);
      if (maxrt.value) body.max_runtime_s = Number(maxrt.value);
      const j = await busy(form.querySelector('button'), () => api.post('/api/v1/jobs', body, { headers: { 'Idempotency-Key': crypto.randomUUID() } }));
      if (j) { toast(`Job #${j.id} ${j.status}`); navigate(`/jobs/${j.id}`); }
    },
  }, proj, entry, args, res, maxrt, h('button', { type: 'submit', class: 'primary' }, 'Submit job'));
  const rows = jobs.map((j) => h('tr', null, h('td', null, h('a', { href: `/jobs/${j.id}` }, `#${j.id}`)), h('td', null, statusBadge(j.status)), h('td', null, j.entry),
    h('td', null, j.resource), h('td', { class: 'num' }, coins(j.charged_mcoins)), h('td', null, when(j.created_at))));
  const timer = setInterval(() => { if (jobs.some((j) => !FINISHED.has(j.status))) navigate('/jobs', { replace: true }); }, 5000);
  onLeave(() => clearInterval(timer));
  return h('div', { class: 'page' }, h('h1', null, 'Jobs'),
    h('section', { class: 'card' }, h('h2', null, 'Submit a job'), projects.length ? form : h('p', null, 'Create a project first.')),
    h('section', { class: 'card' }, table(['Job', 'Status', 'Entry', 'Resource', 'Charged', 'Submitted'], rows, { 'data-testid': 'jobs' })));
}

function statusBadge(s) { return h('span', { class: `badge st-${s}` }, s); }

export async function jobPage(id) {
  const info = h('section', { class: 'card' });
  const logs = h('pre', { class: 'logs', 'data-testid': 'logs', tabindex: '0', 'aria-label': 'Job output' });
  const arts = h('section', { class: 'card' });
  let offset = 0, job = null, stopped = false;
  const cancel = h('button', { class: 'danger', onclick: () => busy(cancel, async () => { await api.del(`/api/v1/jobs/${enc(id)}`); toast('Cancel requested'); }) }, 'Cancel job');

  async function refresh() {
    job = await api.get(`/api/v1/jobs/${enc(id)}`);
    clear(info, h('div', { class: 'stats' },
      stat('Status', statusBadge(job.status)), stat('Entry', job.entry), stat('Resource', `${job.resource}${job.gpus ? ` ×${job.gpus}` : ''}`),
      stat('Queue position', job.status === 'queued' ? job.queue_position : '—'), stat('ETA', job.status === 'queued' && job.eta_s >= 0 ? duration(job.eta_s * 1000) : '—'),
      stat('Charged', coins(job.charged_mcoins)), stat('Exit code', job.exit_code ?? '—'), stat('Started', when(job.started_at)), stat('Ended', when(job.ended_at))),
    job.failure_reason ? h('p', { class: 'neg' }, job.failure_reason) : null,
    FINISHED.has(job.status) ? null : cancel);
  }
  async function pollLogs() {
    const r = await request('GET', `/api/v1/jobs/${enc(id)}/logs`, { raw: true, query: { offset } });
    const text = await r.text();
    if (text) {
      const atEnd = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 4;
      logs.append(text);
      if (atEnd) logs.scrollTop = logs.scrollHeight;
    }
    offset = Number(r.headers.get('X-Log-Offset') || offset + text.length);
  }
  async function loadArtifacts() {
    // scheduler/README.md "Job disk and retention": output is kept job_retention_days after the end
    if (job && job.artifacts_expired_at) { clear(arts, h('h2', null, 'Artifacts'), h('p', null, `Expired on ${when(job.artifacts_expired_at)}: a finished job's output is deleted after the server's retention period.`)); return; }
    const r = await api.get(`/api/v1/jobs/${enc(id)}/artifacts`);
    clear(arts, h('h2', null, 'Artifacts'), table(['File', 'Size', ''], (r.items || []).map((a) => {
      const b = h('button', { class: 'small', onclick: () => busy(b, async () => download(await (await request('GET', `/api/v1/jobs/${enc(id)}/artifacts/${a.path.split('/').map(enc).join('/')}`, { raw: true })).blob(), a.path.split('/').pop())) }, 'Download');
      return h('tr', null, h('td', null, a.path), h('td', null, bytes(a.size)), h('td', null, b));
    })));
  }
  try { await refresh(); }
  catch (e) { if (e instanceof ApiError && e.status === 404) return h('div', { class: 'page' }, h('h1', null, `Job #${id}`), unavailable('Jobs')); throw e; }
  await pollLogs().catch(() => {});
  await loadArtifacts().catch(() => {});
  const tick = async () => {
    if (stopped) return;
    const wasDone = FINISHED.has(job.status);
    try { await refresh(); await pollLogs(); if (FINISHED.has(job.status) && !wasDone) await loadArtifacts(); } catch { /* retry next tick */ }
    if (!stopped && !(wasDone && FINISHED.has(job.status))) setTimeout(tick, 1000);
  };
  setTimeout(tick, 1000);
  onLeave(() => { stopped = true; });
  return h('div', { class: 'page' }, h('h1', null, h('a', { href: '/jobs' }, 'Jobs'), ` / #${id}`), info, h('section', { class: 'card' }, h('h2', null, 'Output'), logs), arts);
}

function stat(label, value) {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value instanceof Node ? value : String(value)));
}
export { field };
