// Model deployments (issue 19 item 6): deploy a project's saved model
// (what paddle.jit.save wrote: PATH.pdmodel + PATH.pdiparams), list them,
// and one deployment's replicas, settings, a request to try in the page, the
// curl command for it, and its usage per day as charts.
import { api, listAll, ApiError } from '../api.js';
import { h, clear, table, busy, toast, coins, when, errorBox, unavailable, field } from '../ui.js';
import { navigate, onLeave } from '../app.js';
import { resourcePicker, stat } from '../widgets.js';
import { barChart } from '../chart.js';

const enc = encodeURIComponent;
const depUrl = (id) => `/api/v1/deployments/${enc(id)}`;

function badge(s) { return h('span', { class: `badge st-${s === 'running' ? 'running' : s === 'stopped' ? 'cancelled' : s}` }, s); }

// The saved models (.pdmodel files) of a version's file list, as prefixes.
const modelPrefixes = (files) => (files || []).filter((f) => f.endsWith('.pdmodel')).map((f) => f.slice(0, -'.pdmodel'.length));

async function deployForm() {
  const projects = await listAll('/api/v1/projects');
  const proj = h('select', { 'aria-label': 'Project', 'data-testid': 'deploy-project' }, projects.map((p) => h('option', { value: p.id }, p.name)));
  const ver = h('select', { 'aria-label': 'Version', 'data-testid': 'deploy-version' });
  const path = h('select', { 'aria-label': 'Saved model', 'data-testid': 'deploy-path' });
  const kind = h('select', { 'aria-label': 'Kind', 'data-testid': 'deploy-kind' },
    h('option', { value: 'model' }, 'saved model (paddle.jit.save)'), h('option', { value: 'python' }, 'Python handler (predict.py)'));
  const name = h('input', { placeholder: 'name (letters, digits, . - _)', required: true, 'aria-label': 'Deployment name', 'data-testid': 'deploy-name' });
  const res = await resourcePicker();
  const num = (label, value, min, max, testid) => h('input', { type: 'number', value, min, max, 'aria-label': label, 'data-testid': testid, style: { width: '6em' } });
  const replicas = num('Replicas', 1, 0, 8, 'deploy-replicas');
  const maxBatch = num('Max batch', 8, 1, 256, 'deploy-max-batch');
  const maxDelay = num('Max delay (ms)', 5, 0, 10000, 'deploy-max-delay');
  const timeout = num('Timeout (ms)', 30000, 1, 600000, 'deploy-timeout');
  const price = num('Price per call (mcoins)', 0, 0, 1000000, 'deploy-price');
  const msg = h('div', { 'aria-live': 'polite' });
  let versions = [];
  async function loadVersions() {
    clear(ver);
    clear(path);
    if (!proj.value) return;
    versions = await listAll(`/api/v1/projects/${enc(proj.value)}/versions`, {}, 200).catch(() => []);
    ver.append(...versions.map((v) => h('option', { value: v.id }, `${String(v.id).slice(0, 8)} · ${v.message || ''}`)));
    loadPaths();
  }
  function loadPaths() {
    clear(path);
    const v = versions.find((x) => x.id === ver.value);
    const py = kind.value === 'python';
    const prefixes = py ? ((v && v.files) || []).filter((f) => f.endsWith('.py')) : modelPrefixes(v && v.files);
    path.append(...prefixes.map((p) => h('option', { value: p }, py ? p : `${p}.pdmodel`)));
    if (!prefixes.length) path.append(h('option', { value: '', disabled: true }, py ? 'no .py file in this version' : 'no .pdmodel in this version'));
    if (!name.value && prefixes.length) name.value = prefixes[0].split('/').pop().replace(/[^A-Za-z0-9._-]/g, '-');
  }
  proj.addEventListener('change', loadVersions);
  ver.addEventListener('change', loadPaths);
  kind.addEventListener('change', loadPaths);
  await loadVersions();
  const form = h('form', {
    class: 'inline-form', 'data-testid': 'deploy-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      clear(msg);
      const body = {
        name: name.value.trim(), kind: kind.value, resource: res.value,
        source: { project_id: proj.value, version: ver.value, path: path.value },
        replicas: Number(replicas.value), max_batch: Number(maxBatch.value), max_delay_ms: Number(maxDelay.value),
        timeout_ms: Number(timeout.value), price_mcoins_per_call: Number(price.value),
      };
      try {
        const d = await busy(form.querySelector('button'), () => api.post('/api/v1/deployments', body));
        if (d) { toast(`Deployed ${d.name}`); navigate(`/deployments/${d.id}`); }
      } catch (e) { clear(msg, errorBox(e.message || String(e))); }
    },
  }, field('Project', proj), field('Version', ver), field('Kind', kind), field('Model', path), field('Name', name), field('Resource', res),
  field('Replicas', replicas), field('Max batch', maxBatch), field('Max delay (ms)', maxDelay), field('Timeout (ms)', timeout),
  field('Price per call (mcoins)', price), h('button', { type: 'submit', class: 'primary', 'data-testid': 'deploy-submit' }, 'Deploy'));
  return h('div', null, projects.length ? form : h('p', null, 'Create a project, save a model into it with paddle.jit.save and make a version first.'), msg);
}

export async function deploymentsPage() {
  let items;
  try { items = await listAll('/api/v1/deployments', {}, 500); }
  catch (e) {
    if (e instanceof ApiError && e.status === 404) return h('div', { class: 'page' }, h('h1', null, 'Deployments'), unavailable('Deployments'));
    throw e;
  }
  const rows = items.map((d) => h('tr', null, h('td', null, h('a', { href: `/deployments/${d.id}` }, d.name)), h('td', null, badge(d.status)),
    h('td', { class: 'num' }, `v${d.model_version}`), h('td', { class: 'num' }, `${d.replicas_ready}/${d.replicas}`), h('td', null, d.resource),
    h('td', { class: 'num' }, coins(d.price_mcoins_per_call)), h('td', null, when(d.updated_at))));
  return h('div', { class: 'page' }, h('h1', null, 'Deployments'),
    h('section', { class: 'card' }, h('h2', null, 'Deploy a saved model'), await deployForm()),
    h('section', { class: 'card' }, table(['Deployment', 'Status', 'Model', 'Ready', 'Resource', 'Price / call', 'Updated'], rows, { 'data-testid': 'deployments' })));
}

// A request body from the model's declared inputs: zeros of the fixed
// shape, a batch of 1 where the first dimension is dynamic.
function sampleBody(inputs) {
  const zeros = (shape) => (shape.length ? Array.from({ length: shape[0] }, () => zeros(shape.slice(1))) : 0);
  const o = {};
  for (const i of inputs || []) {
    const shape = (i.shape || []).map((d) => (d < 0 ? 1 : d));
    o[i.name] = { dtype: i.dtype, shape, data: zeros(shape) };
  }
  return { inputs: o };
}

function curlCommand(d, body) {
  const json = JSON.stringify(body);
  return `curl -X POST ${location.origin}/serve/${d.id}/predict \\\n  -H "Authorization: Bearer $EDDY_KEY" -H 'Content-Type: application/json' \\\n  -d '${json.length > 2000 ? '@input.json' : json.replace(/'/g, "'\\''")}'`;
}

function usageCharts(days) {
  if (!days.length) return h('p', { class: 'muted', 'data-testid': 'usage-empty' }, 'No calls yet.');
  const d = days.slice(-30);
  return h('div', { class: 'charts', 'data-testid': 'usage' },
    barChart(d.map((x) => ({ label: x.day.slice(5), value: x.calls })), { title: 'Calls per day', unit: 'calls' }),
    barChart(d.map((x) => ({ label: x.day.slice(5), value: x.p95_ms })), { title: 'p95 latency per day', unit: 'ms' }),
    table(['Day', 'Calls', 'Errors', 'p50 ms', 'p95 ms', 'p99 ms', 'Cost'], d.slice().reverse().map((x) => h('tr', null, h('td', null, x.day),
      h('td', { class: 'num' }, x.calls), h('td', { class: 'num' }, x.errors), h('td', { class: 'num' }, x.p50_ms), h('td', { class: 'num' }, x.p95_ms),
      h('td', { class: 'num' }, x.p99_ms), h('td', { class: 'num' }, coins(x.cost_mcoins))))));
}

export async function deploymentPage(id) {
  let d;
  try { d = await api.get(depUrl(id)); }
  catch (e) {
    if (e instanceof ApiError && e.status === 404) return h('div', { class: 'page' }, h('h1', null, h('a', { href: '/deployments' }, 'Deployments'), ` / ${id}`), errorBox(e.message));
    throw e;
  }
  const info = h('section', { class: 'card', 'data-testid': 'deployment-info' });
  const reps = h('section', { class: 'card' });
  const usage = h('section', { class: 'card' });
  const body = h('textarea', { rows: 8, class: 'code', 'aria-label': 'Request body', 'data-testid': 'try-body', spellcheck: 'false', style: { width: '100%', fontFamily: 'monospace' } },
    JSON.stringify(sampleBody(d.inputs), null, 1));
  const out = h('pre', { class: 'logs', 'data-testid': 'try-output', 'aria-live': 'polite' });
  const curl = h('pre', { class: 'logs', 'data-testid': 'curl' });
  const send = h('button', {
    class: 'primary', 'data-testid': 'try-send',
    onclick: () => busy(send, async () => {
      let parsed;
      try { parsed = JSON.parse(body.value); } catch (e) { clear(out, `Not JSON: ${e.message}`); return; }
      const t0 = performance.now();
      try {
        const r = await api.post(`/serve/${enc(d.id)}/predict`, parsed);
        clear(out, `${Math.round(performance.now() - t0)} ms · model v${r.model_version} · batch ${r.batch_size}\n${JSON.stringify(r.outputs, null, 1)}`);
      } catch (e) { clear(out, `${e.status || ''} ${e.message || e}`); }
      clear(curl, curlCommand(d, parsed));
    }),
  }, 'Send');
  const copy = h('button', { class: 'small', onclick: async () => { try { await navigator.clipboard.writeText(curl.textContent); toast('Copied'); } catch { toast('Select the text to copy it'); } } }, 'Copy curl command');
  const action = (label, fn, cls = '') => { const b = h('button', { class: cls, onclick: () => busy(b, fn) }, label); return b; };
  const scale = h('input', { type: 'number', min: 0, max: 8, value: d.replicas, 'aria-label': 'Replicas', 'data-testid': 'scale-replicas', style: { width: '5em' } });

  async function refresh() {
    d = await api.get(depUrl(id));
    clear(info, h('div', { class: 'stats' },
      stat('Status', badge(d.status), 'dep-status'), stat('Model version', `v${d.model_version}`), stat('Replicas ready', `${d.replicas_ready}/${d.replicas}`, 'dep-ready'),
      stat('Resource', d.resource), stat('Max batch', d.max_batch), stat('Max delay', `${d.max_delay_ms} ms`), stat('Timeout', `${d.timeout_ms} ms`),
      stat('Price per call', coins(d.price_mcoins_per_call)), stat('Created', when(d.created_at))),
    h('p', null, 'Inputs: ', (d.inputs || []).map((i) => h('code', null, `${i.name} ${i.dtype} [${(i.shape || []).map((x) => (x < 0 ? '?' : x)).join(', ')}] `)),
      ' · endpoint ', h('code', null, `POST ${d.predict_url}`)),
    h('div', { class: 'inline-form' },
      scale, action('Scale', async () => { await api.post(`${depUrl(id)}/scale`, { replicas: Number(scale.value) }); toast('Scaling'); await refresh(); }),
      d.status === 'running' ? action('Stop', async () => { await api.post(`${depUrl(id)}/stop`); await refresh(); })
        : action('Start', async () => { await api.post(`${depUrl(id)}/start`); await refresh(); }),
      action('Delete', async () => { if (!confirm(`Delete ${d.name}?`)) return; await api.del(depUrl(id)); toast('Deleted'); navigate('/deployments'); }, 'danger')));
    clear(reps, h('h2', null, 'Replicas'), table(['Replica', 'Model', 'Status', 'Detail', 'Started', 'Ended'], (d.replica_list || []).map((r) => h('tr', null,
      h('td', null, `#${r.id}`), h('td', null, `v${r.version}`), h('td', null, badge(r.status)), h('td', null, r.detail || ''),
      h('td', null, when(r.started_at)), h('td', null, r.ended_at ? when(r.ended_at) : '—'))), { 'data-testid': 'replicas' }));
  }
  async function loadUsage() {
    const days = await api.get(`${depUrl(id)}/usage`).catch(() => []);
    clear(usage, h('h2', null, 'Usage'), usageCharts(Array.isArray(days) ? days : []));
  }
  await refresh();
  await loadUsage();
  clear(curl, curlCommand(d, sampleBody(d.inputs)));
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try { await refresh(); await loadUsage(); } catch { /* next tick */ }
    if (!stopped) setTimeout(tick, 3000);
  };
  setTimeout(tick, 3000);
  onLeave(() => { stopped = true; });
  return h('div', { class: 'page' }, h('h1', null, h('a', { href: '/deployments' }, 'Deployments'), ` / ${d.name}`), info, reps,
    h('section', { class: 'card' }, h('h2', null, 'Try a request'), body, h('div', { class: 'inline-form' }, send), out,
      h('h3', null, 'curl'), curl, copy, h('p', { class: 'muted' }, 'Make a key with the "serve" scope on the Account page and set EDDY_KEY to it.')),
    usage);
}
