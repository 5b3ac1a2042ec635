// A competition's "My submissions" tab: submit (a CSV chosen or dropped, a
// file of a job's output, or a file of a project), the team's submissions
// with their status, polled while any is queued, validating, running or
// scoring, the error class and message (the validator's, which names the
// line and column) and the public score; and the final selection (up to K,
// before the selection deadline). The CSV goes as the raw request body
// (POST .../submissions, text/csv); the other sources as JSON {job_id, path}
// or {project_id, path}, read by the server beneath that tree.
import { api, listAll, compUrl, apiTime, itemsOf } from './api.js';
import { h, clear, busy, toast, errorBox, bytes, visiblePoll } from './ui.js';
import { onLeave } from './app.js';
import { compHref, myTeam, phase, selectionMax, truthRows, utc } from './pages/competitions.js';

const LIVE = new Set(['queued', 'validating', 'running', 'scoring']);
export const SUBMISSION_MAX = 512 * 1024 * 1024;   // the page refuses bigger files before sending them

const errOf = (s) => (s.error ? s.error : s.error_class || s.error_message ? { class: s.error_class, message: s.error_message, log_tail: s.log_tail } : null);
const scoreOf = (s) => s.public_score ?? s.score;
const fmt = (x) => (x === undefined || x === null ? '—' : Number(x).toPrecision(6).replace(/\.?0+$/, '').replace(/\.?0+e/, 'e'));

// A submission's status as a badge, with its error under it.
export function statusCell(s) {
  const e = errOf(s);
  return h('td', { class: 'comp-status-cell' },
    h('span', { class: `badge comp-st-${s.status}`, 'data-testid': 'comp-sub-status' }, s.status),
    s.retries ? h('span', { class: 'muted small-text' }, ` retried`) : null,
    e ? h('div', { class: 'comp-sub-error', 'data-testid': 'comp-sub-error' },
      h('strong', null, e.class || 'error'), ': ', e.message || '',
      e.log_tail ? h('details', null, h('summary', null, 'Log'), h('pre', { class: 'comp-log' }, e.log_tail)) : null) : null);
}

function sourcePicker(onFile) {
  // Upload: a file input and a drop zone over the same choice.
  const input = h('input', { type: 'file', accept: '.csv,text/csv', 'data-testid': 'comp-submit-file', 'aria-label': 'Submission CSV' });
  const chosen = h('span', { class: 'muted', 'data-testid': 'comp-submit-chosen' }, 'No file chosen.');
  let file = null;
  const choose = (f) => { file = f || null; chosen.textContent = f ? `${f.name} (${bytes(f.size)})` : 'No file chosen.'; onFile(); };
  input.addEventListener('change', () => choose(input.files[0]));
  const drop = h('div', { class: 'comp-drop', 'data-testid': 'comp-drop' }, h('p', null, 'Drop a CSV here, or '), input, chosen);
  drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (ev) => { ev.preventDefault(); drop.classList.remove('over'); choose(ev.dataTransfer.files[0]); });

  // A job's output file or a project's file: which one, and the path in it.
  const jobs = h('select', { 'aria-label': 'Job', 'data-testid': 'comp-submit-job' }, h('option', { value: '' }, 'Choose a job…'));
  const projects = h('select', { 'aria-label': 'Project', 'data-testid': 'comp-submit-project' }, h('option', { value: '' }, 'Choose a project…'));
  const jobPath = h('input', { placeholder: 'submission.csv (in the job\'s output)', 'data-testid': 'comp-submit-job-path', 'aria-label': 'Path in the job output' });
  const projPath = h('input', { placeholder: 'submission.csv (in the project)', 'data-testid': 'comp-submit-project-path', 'aria-label': 'Path in the project' });
  let loaded = false;
  const loadLists = () => {
    if (loaded) return;
    loaded = true;
    listAll('/api/v1/jobs', {}, 200).then((js) => jobs.append(...js.map((j) => h('option', { value: j.id }, `${j.name || j.id} · ${j.status || ''}`)))).catch(() => {});
    listAll('/api/v1/projects', {}, 500).then((ps) => projects.append(...ps.map((p) => h('option', { value: p.id }, p.name || p.id)))).catch(() => {});
  };
  const panes = {
    file: drop,
    job: h('div', { class: 'comp-src-row' }, jobs, jobPath),
    project: h('div', { class: 'comp-src-row' }, projects, projPath),
  };
  let kind = 'file';
  const radios = h('div', { class: 'comp-src', role: 'radiogroup', 'aria-label': 'Source' },
    [['file', 'Upload a CSV'], ['job', 'A job\'s output file'], ['project', 'A project file']].map(([k, label]) => h('label', { class: 'check' },
      h('input', { type: 'radio', name: 'comp-src', value: k, checked: k === kind, 'data-testid': `comp-src-${k}`, onchange: () => { kind = k; if (k !== 'file') loadLists(); for (const [n, p] of Object.entries(panes)) p.hidden = n !== k; onFile(); } }),
      ' ', label)));
  panes.job.hidden = true; panes.project.hidden = true;
  for (const el of [jobs, projects, jobPath, projPath]) el.addEventListener('input', onFile);
  return {
    el: h('div', null, radios, panes.file, panes.job, panes.project),
    // What to POST, or null when incomplete (throws on a file too big).
    body() {
      if (kind === 'file') {
        if (!file) return null;
        if (file.size > SUBMISSION_MAX) throw new Error(`${file.name} is ${bytes(file.size)}; a submission may be at most ${bytes(SUBMISSION_MAX)}.`);
        return { raw: file, label: file.name };
      }
      if (kind === 'job') return jobs.value && jobPath.value.trim() ? { json: { job_id: /^\d+$/.test(jobs.value) ? Number(jobs.value) : jobs.value, path: jobPath.value.trim() }, label: jobPath.value.trim() } : null;
      return projects.value && projPath.value.trim() ? { json: { project_id: projects.value, path: projPath.value.trim() }, label: projPath.value.trim() } : null;
    },
    reset() { input.value = ''; choose(null); },
  };
}

export async function submissionsTab(c) {
  const url = `${compUrl(c.id)}/submissions`;
  const p = phase(c);
  const team = await myTeam(c).catch(() => null);
  const K = selectionMax(c);
  const selOpen = Date.now() < apiTime(c.selection_deadline);
  const list = h('div', { 'data-testid': 'comp-subs' });
  const caps = h('p', { class: 'muted', 'data-testid': 'comp-caps' });
  const result = h('div', { 'data-testid': 'comp-submit-result', 'aria-live': 'polite' });
  let subs = [], selected = new Set(), dirty = false, stopPoll = null;

  async function refresh() {
    const r = await api.get(url, { query: { limit: 500 } });
    subs = itemsOf(r).sort((a, b) => apiTime(b.created_at) - apiTime(a.created_at));
    if (!dirty) selected = new Set(subs.filter((s) => s.selected).map((s) => s.id));
    draw();
    const live = subs.some((s) => LIVE.has(s.status));
    if (live && !stopPoll) { stopPoll = visiblePoll(refresh, { period: 1500 }); onLeave(stopPoll); }
    if (!live && stopPoll) { stopPoll(); stopPoll = null; }
  }

  const saveSel = h('button', {
    class: 'small', 'data-testid': 'comp-save-selection', disabled: true,
    onclick: () => busy(saveSel, async () => {
      await api.post(`${url}/select`, { ids: [...selected] });
      dirty = false;
      toast(selected.size ? `Final selection saved (${selected.size} of ${K}).` : 'Selection cleared: your best public submissions count.');
      await refresh();
    }),
  }, 'Save final selection');

  function draw() {
    const today = subs.filter((s) => s.counted !== false && new Date(apiTime(s.created_at)).toISOString().slice(0, 10) === new Date().toISOString().slice(0, 10)).length;
    const used = team && team.submissions_today !== undefined ? team.submissions_today : today;
    caps.textContent = `${used} of ${c.daily_cap} submissions used today (resets at 00:00 UTC)${c.total_cap ? `; ${team && team.submissions !== undefined ? team.submissions : subs.filter((s) => s.counted !== false).length} of ${c.total_cap} in all` : ''}. An invalid submission ${c.invalid_counts ? 'counts' : 'does not count'}.`;
    const rows = subs.map((s) => {
      const canPick = selOpen && s.status === 'scored';
      const box = h('input', {
        type: 'checkbox', checked: selected.has(s.id), disabled: !canPick || (!selected.has(s.id) && selected.size >= K),
        'aria-label': `Select ${s.id} for the final ranking`, 'data-testid': 'comp-select',
        onchange: (ev) => { if (ev.target.checked) selected.add(s.id); else selected.delete(s.id); dirty = true; draw(); },
      });
      return h('tr', { 'data-testid': 'comp-sub-row', 'data-id': s.id, 'data-status': s.status, class: selected.has(s.id) ? 'sel' : null },
        h('td', null, utc(s.created_at), s.code || s.kind === 'code' ? h('span', { class: 'muted small-text' }, ' code') : null),
        statusCell(s),
        h('td', { class: 'num', 'data-testid': 'comp-sub-score' }, fmt(scoreOf(s))),
        h('td', null, s.counted === false ? h('span', { class: 'muted' }, 'not counted') : 'counted'),
        h('td', null, box));
    });
    clear(list, h('table', { class: 'table comp-subs-table' },
      h('thead', null, h('tr', null, h('th', null, 'Submitted'), h('th', null, 'Status'), h('th', { class: 'num' }, 'Public score'), h('th', null, 'Cap'), h('th', null, `Final (${selected.size}/${K})`))),
      h('tbody', null, rows.length ? rows : h('tr', null, h('td', { colspan: 5, class: 'muted' }, 'No submission yet.')))));
    saveSel.disabled = !dirty || !selOpen || selected.size === 0;
  }

  // The submit form, once the rules are accepted and while the competition runs.
  let form;
  if (!c.rules_accepted) {
    form = h('div', { class: 'card comp-need-rules', 'data-testid': 'comp-need-rules' },
      h('p', null, 'Accept the competition\'s rules before your first submission.'),
      h('a', { class: 'button primary', href: compHref(c, 'rules') }, 'Read and accept the rules'));
  } else if (p !== 'active') {
    form = h('p', { class: 'muted', 'data-testid': 'comp-submit-closed' }, p === 'upcoming' ? 'Submissions open when the competition starts.' : 'The competition has ended: no more submissions.');
  } else {
    const send = h('button', { class: 'primary', 'data-testid': 'comp-submit', disabled: true }, 'Submit');
    const picker = sourcePicker(() => { clear(result); try { send.disabled = !picker.body(); } catch { send.disabled = false; } });
    send.addEventListener('click', () => busy(send, async () => {
      clear(result);
      let b;
      try { b = picker.body(); } catch (e) { clear(result, errorBox(e)); return; }
      if (!b) return;
      let s;
      try {
        s = b.raw ? await api.post(url, b.raw, { headers: { 'Content-Type': 'text/csv' } }) : await api.post(url, b.json);
      } catch (e) {
        // Refused before it was queued: too big, over the cap, rules, ... (the server's words).
        clear(result, h('div', { class: 'error-box', role: 'alert', 'data-testid': 'comp-submit-error' }, e.message));
        return;
      }
      picker.reset();
      clear(result, h('p', { class: 'ok', 'data-testid': 'comp-submit-ok' }, `Submitted ${b.label}. Its status is in the list below: it is validated, then scored.`));
      if (s && errOf(s)) result.append(h('div', { class: 'error-box', role: 'alert', 'data-testid': 'comp-submit-error' }, `${errOf(s).class}: ${errOf(s).message}`));
      await refresh();
    }));
    form = h('div', { class: 'card comp-submit-form', 'data-testid': 'comp-submit-form' },
      h('h3', null, 'Submit predictions'),
      h('p', { class: 'muted' }, `A CSV with the columns `, h('code', null, [c.id_column, ...(c.target_columns || [])].filter(Boolean).join(',')),
        truthRows(c) ? ` and one row per test id (${truthRows(c)} rows).` : ', one row per test id.',
        team ? ` Submitting for team ${team.name}.` : ' Your first submission makes you a team of one.'),
      picker.el, h('div', { class: 'comp-actions' }, send), result);
  }

  await refresh();
  return h('div', { class: 'comp-submissions' }, form, caps, list,
    h('div', { class: 'comp-actions' }, saveSel,
      h('span', { class: 'muted' }, selOpen
        ? `Choose up to ${K} scored submissions for the final (private) ranking before ${new Date(apiTime(c.selection_deadline)).toISOString().slice(0, 16).replace('T', ' ')} UTC; without a choice your best public ones count.`
        : 'The final selection is closed.')));
}
