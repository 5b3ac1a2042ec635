// The host console: "Host a competition" (/competitions/new) and a
// competition's Host tab: every field of API.md's POST as a form (times are
// UTC), with the server's refusal shown next to the field it names (the
// library's messages start with the field: "end_at must ...", "target_columns
// holds ..."); the ground truth uploaded as a raw CSV (only whether it is
// stored and its row count ever come back, never its content); and every
// team's submissions, polled while any is in flight.
import { api, listAll, compUrl, apiTime, itemsOf, dsUrl, noRoute } from './api.js';
import { h, clear, busy, toast, errorBox, bytes, visiblePoll, unavailable } from './ui.js';
import { navigate, onLeave } from './app.js';
import { compHref, datasetOf, modeOf, selectionMax, truthRows, utc } from './pages/competitions.js';
import { statusCell } from './competitions_submit.js';

const METRICS = ['accuracy', 'f1_macro', 'f1_micro', 'rmse', 'mae', 'logloss', 'auc', 'map@k'];
const MODES = [['public', 'Public leaderboard'], ['own_score', 'Only my own score'], ['hidden', 'Hidden until the end']];
const TRUTH_MAX = 1024 * 1024 * 1024;
const SCORER_MAX = 1024 * 1024;

// <input type=datetime-local> holds a naive time: the form treats it as UTC.
// Seconds are kept (step=1), so a short test timeline can be set.
const toLocalInput = (t) => { const ms = apiTime(t); return isNaN(ms) ? '' : new Date(ms).toISOString().slice(0, 19); };
const fromLocalInput = (v) => (v ? new Date(`${v.length === 16 ? `${v}:00` : v}Z`).toISOString().replace(/\.\d{3}Z$/, 'Z') : null);

// The form's fields: [key in the API, label, element, read(el) → value].
function competitionForm(c = {}) {
  const started = c.id && Date.now() >= apiTime(c.start_at);
  const errs = {};
  const row = [];
  const add = (key, label, el, help) => {
    errs[key] = h('div', { class: 'comp-field-error', 'data-testid': `comp-err-${key}`, role: 'alert' });
    const check = el.type === 'checkbox';
    row.push(h('label', { class: `field comp-field${check ? ' comp-check' : ''}`, 'data-field': key }, check ? el : null, h('span', null, label), check ? null : el, help ? h('small', { class: 'muted' }, help) : null, errs[key]));
    return el;
  };
  const inp = (key, attrs = {}) => h('input', { 'data-testid': `comp-f-${key}`, name: key, ...attrs });
  const now = Date.now(), day = 86400000;
  const def = (t, off) => toLocalInput(t || new Date(now + off).toISOString());
  const f = {};
  f.title = add('title', 'Title', inp('title', { value: c.title || '', required: true, maxlength: 200 }));
  f.slug = add('slug', 'Slug (in the URL)', inp('slug', { value: c.slug || '', maxlength: 64, placeholder: 'from the title' }));
  f.overview = add('overview', 'Overview (Markdown)', h('textarea', { rows: 6, 'data-testid': 'comp-f-overview' }));
  f.overview.value = c.overview || '';
  f.rules = add('rules', 'Rules (Markdown)', h('textarea', { rows: 6, 'data-testid': 'comp-f-rules' }));
  f.rules.value = c.rules || '';
  f.start_at = add('start_at', 'Start (UTC)', inp('start_at', { type: 'datetime-local', step: 1, value: def(c.start_at, day), disabled: started }));
  f.merge_deadline = add('merge_deadline', 'Team merger deadline (UTC)', inp('merge_deadline', { type: 'datetime-local', step: 1, value: def(c.merge_deadline, 22 * day) }));
  f.selection_deadline = add('selection_deadline', 'Final selection deadline (UTC)', inp('selection_deadline', { type: 'datetime-local', step: 1, value: def(c.selection_deadline, 29 * day) }));
  f.end_at = add('end_at', 'End (UTC)', inp('end_at', { type: 'datetime-local', step: 1, value: def(c.end_at, 29 * day) }));
  const ds = datasetOf(c);
  f.dataset = add('dataset', 'Dataset', h('select', { 'data-testid': 'comp-f-dataset' }, h('option', { value: '' }, '(none yet)')));
  f.version = add('version', 'Dataset version', inp('version', { type: 'number', min: 1, value: ds && ds.version !== 'latest' ? ds.version : '' }));
  listAll('/api/v1/datasets', {}, 500).then((items) => {
    for (const d of items.filter((x) => x.latest_version > 0 || (ds && x.id === ds.id))) {
      f.dataset.append(h('option', { value: d.id, selected: ds && ds.id === d.id, 'data-latest': d.latest_version }, `${d.owner}/${d.slug} (v${d.latest_version})`));
    }
    if (ds && ![...f.dataset.options].some((o) => o.value === ds.id)) f.dataset.append(h('option', { value: ds.id, selected: true }, ds.id));
  }).catch(() => {});
  f.dataset.addEventListener('change', () => { const o = f.dataset.selectedOptions[0]; if (o && o.dataset.latest) f.version.value = o.dataset.latest; });
  f.id_column = add('id_column', 'Id column', inp('id_column', { value: c.id_column || 'id', disabled: started }));
  f.target_columns = add('target_columns', 'Target column', inp('target_columns', { value: (c.target_columns || ['target']).join(', '), disabled: started }), 'for logloss/auc: the class columns, comma separated');
  f.metric = add('metric', 'Metric', h('select', { 'data-testid': 'comp-f-metric', disabled: started }, METRICS.map((m) => h('option', { value: m, selected: (c.metric || 'accuracy') === m }, m))));
  f.k = add('k', 'k (map@k only)', inp('k', { type: 'number', min: 1, max: 1000, value: c.k || '', disabled: started }));
  f.public_fraction = add('public_fraction', 'Public fraction of the test rows', inp('public_fraction', { type: 'number', min: 0, max: 1, step: 0.01, value: c.public_fraction ?? 0.3, disabled: started }));
  f.leaderboard = add('leaderboard', 'Leaderboard', h('select', { 'data-testid': 'comp-f-leaderboard' }, MODES.map(([m, l]) => h('option', { value: m, selected: modeOf(c) === m }, l))));
  f.daily_cap = add('daily_cap', 'Submissions a day per team', inp('daily_cap', { type: 'number', min: 1, value: c.daily_cap ?? 5 }));
  f.total_cap = add('total_cap', 'Submissions in all (0: no limit)', inp('total_cap', { type: 'number', min: 0, value: c.total_cap ?? 0 }));
  f.max_team_size = add('max_team_size', 'Maximum team size', inp('max_team_size', { type: 'number', min: 1, value: c.max_team_size ?? 5 }));
  f.selection_max = add('selection_max', 'Final submissions a team selects (K)', inp('selection_max', { type: 'number', min: 1, value: selectionMax(c) }));
  f.invalid_counts = add('invalid_counts', 'An invalid submission uses a slot', h('input', { type: 'checkbox', checked: !!c.invalid_counts, 'data-testid': 'comp-f-invalid_counts' }));
  const code = c.code_competition || (c.code_enabled ? { resource: c.code_resource, max_runtime_s: c.code_max_runtime_s, output_path: c.code_output_path, charged: c.code_charged } : null);
  f.code = add('code_competition', 'Code competition (participants submit code, rerun on the hidden inputs)', h('input', { type: 'checkbox', checked: !!code, 'data-testid': 'comp-f-code' }));
  f.code_resource = add('code_competition.resource', 'Code: resource', inp('code_resource', { value: (code && code.resource) || 'cpu' }));
  f.code_runtime = add('code_competition.max_runtime_s', 'Code: time limit (s)', inp('code_runtime', { type: 'number', min: 1, max: 86400, value: (code && code.max_runtime_s) || 3600 }));
  f.code_output = add('code_competition.output_path', 'Code: output file', inp('code_output', { value: (code && code.output_path) || 'submission.csv' }));
  f.code_charged = add('code_competition.charged', 'Code: runs are charged to the participant', h('input', { type: 'checkbox', checked: !!(code && code.charged), 'data-testid': 'comp-f-code_charged' }));
  // The code settings only while "code competition" is ticked.
  const codeRows = () => row.filter((r) => r.dataset.field.startsWith('code_competition.'));
  const showCode = () => { for (const r of codeRows()) r.hidden = !f.code.checked; };
  f.code.addEventListener('change', showCode);
  showCode();
  const general = h('div', { 'data-testid': 'comp-form-error' });

  const num = (el) => (el.value === '' ? undefined : Number(el.value));
  function value() {
    const v = {
      title: f.title.value.trim(), overview: f.overview.value, rules: f.rules.value,
      merge_deadline: fromLocalInput(f.merge_deadline.value), selection_deadline: fromLocalInput(f.selection_deadline.value), end_at: fromLocalInput(f.end_at.value),
      leaderboard: f.leaderboard.value, daily_cap: num(f.daily_cap), total_cap: num(f.total_cap) || 0, max_team_size: num(f.max_team_size),
      selection_max: num(f.selection_max), invalid_counts: f.invalid_counts.checked,
    };
    if (f.slug.value.trim()) v.slug = f.slug.value.trim();
    if (!started) {
      Object.assign(v, {
        start_at: fromLocalInput(f.start_at.value), id_column: f.id_column.value.trim(),
        target_columns: f.target_columns.value.split(',').map((s) => s.trim()).filter(Boolean),
        metric: f.metric.value, public_fraction: num(f.public_fraction),
      });
      if (f.k.value !== '') v.k = num(f.k);
    }
    if (f.dataset.value) v.dataset = { dataset_id: f.dataset.value, version: num(f.version) };
    if (c.id && !f.code.checked) v.code_competition = null;
    if (f.code.checked) v.code_competition = { resource: f.code_resource.value.trim(), max_runtime_s: num(f.code_runtime), output_path: f.code_output.value.trim(), charged: f.code_charged.checked };
    return v;
  }
  // The server's message next to the field it names first (the longest key
  // that matches wins: "code_competition.output_path" over "output_path").
  function showError(e) {
    for (const el of Object.values(errs)) clear(el);
    const msg = e.message || String(e);
    let best = null, at = Infinity;
    for (const key of Object.keys(errs).sort((a, b) => b.length - a.length)) {
      const names = key === 'dataset' ? ['dataset'] : key === 'version' ? [] : [key];
      for (const n of names) {
        const i = msg.search(new RegExp(`\\b${n.replace(/[.@]/g, '\\$&')}\\b`));
        if (i >= 0 && i < at) { at = i; best = key; }
      }
    }
    clear(general, errorBox(e));
    if (best) {
      errs[best].textContent = msg;
      errs[best].closest('.comp-field').scrollIntoView({ block: 'center' });
    }
  }
  const clearErrors = () => { clear(general); for (const el of Object.values(errs)) clear(el); };
  const el = h('div', { class: 'comp-form', 'data-testid': 'comp-form' },
    started ? h('p', { class: 'muted' }, 'The competition has started: its start, metric, columns and public fraction are fixed.') : null,
    h('div', { class: 'comp-form-grid' }, row), general);
  return { el, value, showError, clearErrors };
}

export async function newCompetitionPage() {
  const form = competitionForm();
  const ok = h('button', {
    class: 'primary', 'data-testid': 'comp-create',
    onclick: () => busy(ok, async () => {
      form.clearErrors();
      let c;
      try { c = await api.post('/api/v1/competitions', form.value()); }
      catch (e) { if (noRoute(e)) { form.showError(new Error('Competitions are not available on this server.')); return; } form.showError(e); return; }
      toast(`Created ${c.title}. Upload the ground truth before the start.`);
      navigate(compHref(c, 'host'));
    }),
  }, 'Create competition');
  return h('div', { class: 'page comp-host', 'data-testid': 'comp-new-page' },
    h('div', { class: 'page-head' }, h('h1', null, 'Host a competition')),
    h('p', { class: 'muted' }, 'Hosts are admins and the users an admin makes hosts. Every time is UTC.'),
    form.el, h('div', { class: 'comp-actions' }, ok, h('a', { class: 'button', href: '/competitions' }, 'Cancel')));
}

function truthCard(c) {
  const status = h('p', { 'data-testid': 'comp-truth-status' }, c.has_truth
    ? `The ground truth is stored: ${truthRows(c)} rows. It is never shown back, to anyone.`
    : 'No ground truth yet: upload it before the start.');
  const input = h('input', { type: 'file', accept: '.csv,text/csv', 'data-testid': 'comp-truth-file', 'aria-label': 'Ground truth CSV' });
  const out = h('div', { 'data-testid': 'comp-truth-result' });
  const up = h('button', {
    class: 'primary', 'data-testid': 'comp-truth-upload',
    onclick: () => busy(up, async () => {
      clear(out);
      const file = input.files[0];
      if (!file) throw new Error('Choose the CSV first.');
      if (file.size > TRUTH_MAX) throw new Error(`${file.name} is ${bytes(file.size)}; the truth may be at most 1 GiB.`);
      try { await api.put(`${compUrl(c.id)}/truth`, file, { headers: { 'Content-Type': 'text/csv' } }); }
      catch (e) { clear(out, h('div', { class: 'error-box', role: 'alert', 'data-testid': 'comp-truth-error' }, e.message)); return; }
      input.value = '';
      const fresh = await api.get(compUrl(c.id));
      status.textContent = `The ground truth is stored: ${truthRows(fresh)} rows. It is never shown back, to anyone.`;
      toast('Ground truth stored.');
    }),
  }, 'Upload');
  const started = Date.now() >= apiTime(c.start_at);
  return h('div', { class: 'card', 'data-testid': 'comp-truth' }, h('h3', null, 'Ground truth'), status,
    h('p', { class: 'muted' }, `A CSV with the columns ${[c.id_column, ...(c.target_columns || [])].join(',')}; kept outside every dataset and mount. ${started ? 'The competition has started: the truth is fixed.' : ''}`),
    started ? null : h('div', { class: 'inline-form' }, input, up), out);
}

// A custom scoring program (Codabench-style): its direction and limits go in
// the competition's "scorer" setting, the Python file to PUT .../scorer;
// "Remove" (DELETE) goes back to the built-in metric. Only whether one is
// stored ever comes back; its output never does (a run's failure is a fixed
// scoring_error message).
function scorerCard(c) {
  const sc = c.scorer || null;
  const started = Date.now() >= apiTime(c.start_at);
  const status = h('p', { 'data-testid': 'comp-scorer-status' });
  const say = (x) => {
    status.textContent = !x ? `No scoring program: the built-in metric ${c.metric} scores.`
      : x.uploaded ? `A scoring program is stored (${x.direction} is better; ${x.timeout_s} s and ${x.memory_mb} MiB a run).`
        : `Scored by a program (${x.direction} is better), not uploaded yet: submissions fail with scoring_error until it is.`;
  };
  say(sc);
  const dir = h('select', { 'data-testid': 'comp-scorer-direction', 'aria-label': 'Direction' },
    [['higher', 'Higher is better'], ['lower', 'Lower is better']].map(([v, l]) => h('option', { value: v, selected: (sc && sc.direction) === v }, l)));
  const timeout = h('input', { type: 'number', min: 1, max: 240, value: (sc && sc.timeout_s) || 60, 'data-testid': 'comp-scorer-timeout', 'aria-label': 'Time limit (s)' });
  const memory = h('input', { type: 'number', min: 64, max: 8192, value: (sc && sc.memory_mb) || 1024, 'data-testid': 'comp-scorer-memory', 'aria-label': 'Memory limit (MiB)' });
  const input = h('input', { type: 'file', accept: '.py,text/x-python', 'data-testid': 'comp-scorer-file', 'aria-label': 'Scoring program (Python)' });
  const out = h('div', { 'data-testid': 'comp-scorer-result' });
  const fail = (e) => clear(out, h('div', { class: 'error-box', role: 'alert', 'data-testid': 'comp-scorer-error' }, e.message));
  const up = h('button', {
    class: 'primary', 'data-testid': 'comp-scorer-upload',
    onclick: () => busy(up, async () => {
      clear(out);
      const file = input.files[0];
      if (!file) throw new Error('Choose the Python file first.');
      if (file.size > SCORER_MAX) throw new Error(`${file.name} is ${bytes(file.size)}; a scoring program may be at most 1 MiB.`);
      let fresh;
      try {
        await api.put(compUrl(c.id), { scorer: { direction: dir.value, timeout_s: Number(timeout.value), memory_mb: Number(memory.value) } });
        fresh = await api.put(`${compUrl(c.id)}/scorer`, file, { headers: { 'Content-Type': 'text/x-python' } });
      } catch (e) { fail(e); return; }
      input.value = '';
      say(fresh && fresh.scorer);
      toast('Scoring program stored.');
    }),
  }, 'Upload');
  const rm = h('button', {
    'data-testid': 'comp-scorer-remove',
    onclick: () => busy(rm, async () => {
      clear(out);
      let fresh;
      try { fresh = await api.del(`${compUrl(c.id)}/scorer`); } catch (e) { fail(e); return; }
      say(fresh && fresh.scorer);
      toast('Back to the built-in metric.');
    }),
  }, 'Remove');
  return h('div', { class: 'card', 'data-testid': 'comp-scorer' }, h('h3', null, 'Scoring program (optional)'), status,
    h('p', { class: 'muted' }, 'A Python file run as python3 scorer.py TRUTH.csv SUBMISSION.csv in the sandbox, without network, once on the public rows and once on the private rows, after the submission passed the metric\'s checks. Its last line must be {"score": <number>}; nothing else it prints is kept.'
      + (started ? ' The competition has started: the scoring program is fixed.' : '')),
    started ? null : h('div', { class: 'inline-form' }, dir, h('label', null, 'Time limit (s) ', timeout),
      h('label', null, 'Memory (MiB) ', memory), input, up, rm), out);
}

async function allSubmissions(c) {
  const box = h('div', { 'data-testid': 'comp-all-subs' });
  let stop = null;
  async function load() {
    const r = await api.get(`${compUrl(c.id)}/submissions`, { query: { all: 1, limit: 500 } });
    const items = itemsOf(r).sort((a, b) => apiTime(b.created_at) - apiTime(a.created_at));
    clear(box, h('table', { class: 'table' },
      h('thead', null, h('tr', null, h('th', null, 'Submitted'), h('th', null, 'Team'), h('th', null, 'By'), h('th', null, 'Status'), h('th', { class: 'num' }, 'Public score'))),
      h('tbody', null, items.length ? items.map((s) => h('tr', { 'data-testid': 'comp-all-row', 'data-status': s.status },
        h('td', null, utc(s.created_at)), h('td', null, s.team || s.team_name || `#${s.team_id}`), h('td', null, s.username || s.user || `user ${s.user_id}`),
        statusCell(s), h('td', { class: 'num' }, s.public_score ?? '—'))) : h('tr', null, h('td', { colspan: 5, class: 'muted' }, 'No submission yet.')))));
    const live = items.some((s) => ['queued', 'validating', 'running', 'scoring'].includes(s.status));
    if (live && !stop) { stop = visiblePoll(load, { period: 2000 }); onLeave(stop); }
    if (!live && stop) { stop(); stop = null; }
  }
  try { await load(); } catch (e) { clear(box, noRoute(e) ? unavailable('All submissions') : errorBox(e)); }
  return box;
}

export async function hostTab(c) {
  const form = competitionForm(c);
  const save = h('button', {
    class: 'primary', 'data-testid': 'comp-save',
    onclick: () => busy(save, async () => {
      form.clearErrors();
      try { await api.put(compUrl(c.id), form.value()); } catch (e) { form.showError(e); return; }
      toast('Saved.');
    }),
  }, 'Save changes');
  let dsNote = null;
  const ds = datasetOf(c);
  if (ds) dsNote = api.get(dsUrl(ds.id)).then(() => null).catch((e) => h('p', { class: 'neg' }, `The dataset: ${e.message}`));
  return h('div', { class: 'comp-host' },
    truthCard(c),
    scorerCard(c),
    await dsNote,
    h('div', { class: 'card' }, h('h3', null, 'Settings'), form.el, h('div', { class: 'comp-actions' }, save)),
    h('div', { class: 'card' }, h('h3', null, 'All submissions'), await allSubmissions(c)));
}
