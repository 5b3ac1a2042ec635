// Jobs: submit a batch job, list them, and one job's live status, logs,
// artifacts (download, copy them into a project's workspace, or save them as
// a version of a dataset) and charge.
import { api, listAll, request, ApiError } from '../api.js';
import { h, clear, table, busy, toast, coins, duration, when, bytes, unavailable, download, errorBox } from '../ui.js';
import { app, navigate, onLeave } from '../app.js';
import { resourcePicker, stat } from '../widgets.js';

const enc = encodeURIComponent;
const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

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
  // Notebook kernels are scheduled as jobs with the entry "@kernel"; they
  // are not the user's jobs (the running-kernels panel shows them).
  jobs = jobs.filter((j) => !String(j.entry || '').startsWith('@'));
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
    const items = r.items || [];
    clear(arts, h('h2', null, 'Artifacts'), table(['File', 'Size', ''], items.map((a) => {
      const b = h('button', { class: 'small', onclick: () => busy(b, async () => download(await (await request('GET', `/api/v1/jobs/${enc(id)}/artifacts/${a.path.split('/').map(enc).join('/')}`, { raw: true })).blob(), a.path.split('/').pop())) }, 'Download');
      return h('tr', null, h('td', null, a.path), h('td', null, bytes(a.size)), h('td', null, b));
    }), { 'data-testid': 'artifacts' }), items.length ? await copyArtifactsForm(id, job) : null,
    items.length && FINISHED.has(job.status) ? await (await import('../datasets_save.js')).saveOutputAsDataset(id) : null);   // lazy: not in the entry
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

// "Copy artifacts to project": POST /api/v1/jobs/{id}/artifacts/copy
// {project_id, dest_dir?} copies the job's output into a project's workspace
// (the job itself keeps running on its immutable version). Shows what was
// copied and what was skipped, and errors in place (402: workspace full).
async function copyArtifactsForm(id, job) {
  let projects = [];
  try { projects = (await listAll('/api/v1/projects')).filter((p) => !app.me || p.owner_id === app.me.id || p.owner === app.me.username); }
  catch { /* the picker stays empty */ }
  const proj = h('select', { 'aria-label': 'Project to copy into', 'data-testid': 'copy-project' },
    projects.map((p) => h('option', { value: p.id, selected: job && String(p.id) === String(job.project_id) }, p.name)));
  const dest = h('input', { placeholder: `folder (default jobs/${id})`, 'aria-label': 'Destination folder', 'data-testid': 'copy-dest', style: { width: '14em' } });
  const overwrite = h('input', { type: 'checkbox', 'data-testid': 'copy-overwrite' });
  const result = h('div', { class: 'copy-result', 'data-testid': 'copy-result', 'aria-live': 'polite' });
  const btn = h('button', {
    class: 'primary', 'data-testid': 'copy-artifacts',
    onclick: async () => {
      clear(result);
      btn.disabled = true;
      try {
        const body = { project_id: proj.value };
        const d = dest.value.trim().replace(/^\/+|\/+$/g, '');
        if (d) body.dest_dir = d;
        if (overwrite.checked) body.overwrite = true;
        const r = await api.post(`/api/v1/jobs/${enc(id)}/artifacts/copy`, body);
        const files = r.files || [], skipped = r.skipped || [];
        const name = (projects.find((p) => String(p.id) === String(proj.value)) || {}).name || 'the project';
        clear(result,
          h('p', { class: 'ok' }, `Copied ${files.length} file${files.length === 1 ? '' : 's'} into `, h('a', { href: `/projects/${enc(proj.value)}` }, name),
            r.dest_dir || d ? ` / ${r.dest_dir || d}` : '', '.'),
          files.length ? h('ul', { 'data-testid': 'copied' }, files.map((f) => h('li', null, h('code', null, f.path), ` · ${bytes(f.size)}`))) : null,
          skipped.length ? [h('p', { class: 'neg' }, `Skipped ${skipped.length}:`),
            h('ul', { 'data-testid': 'skipped' }, skipped.map((f) => h('li', null, h('code', null, f.path), ` · ${f.reason}`)))] : null);
        toast(`Copied ${files.length} file(s) to ${name}`);
      } catch (e) {
        let msg = e.message || String(e);
        if (e instanceof ApiError && e.status === 402) msg = `Not copied: the project's workspace has no room for these files (${msg}). Delete files or raise the limit, then try again.`;
        else if (e instanceof ApiError && e.status === 404) msg = `Not copied: ${msg || 'the job, its artifacts or the project was not found'}.`;
        else if (e instanceof ApiError && e.status === 409) msg = `Not copied: ${msg}. Choose another folder, or tick "Replace existing files".`;
        else msg = `Not copied: ${msg}`;
        clear(result, errorBox(msg));
      } finally { btn.disabled = false; }
    },
  }, 'Copy artifacts to project');
  return h('div', { class: 'copy-artifacts' },
    h('h3', null, 'Copy into a project'),
    projects.length
      ? h('div', { class: 'inline-form' }, proj, dest, h('label', { class: 'check' }, overwrite, 'Replace existing files'), btn)
      : h('p', { class: 'muted' }, 'You have no project to copy into.'),
    result);
}
