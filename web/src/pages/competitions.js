// Competitions (issue 16, item 10): the list (active, upcoming, ended, with a
// countdown to the next deadline) and one competition's page, with tabs in the
// URL (/competitions/{id}/{tab}): Overview and Rules (Markdown; "I accept the
// rules" before the first submission), Data (the dataset version: its page,
// download, attach to a project), Leaderboard (competitions_board.js),
// Submissions (competitions_submit.js), Team (competitions_team.js) and, for
// its host or an admin, Host (competitions_host.js, also /competitions/new).
// Lazily loaded: nothing here is in the entry chunk. A competition is reached
// by id or slug (the API takes both).
import '../competitions.css';
import { api, listAll, compUrl, dsUrl, dsArchiveUrl, apiTime, itemsOf, noRoute, ApiError } from '../api.js';
import { h, clear, busy, toast, when, errorBox, unavailable } from '../ui.js';
import { navigate, onLeave } from '../app.js';

const enc = encodeURIComponent;
export const compHref = (c, tab) => `/competitions/${enc(c.slug || c.id)}${tab ? `/${tab}` : ''}`;

// ---- shared helpers (the tab modules import these) ----------------------------------

// The fields under the names API.md gives, whatever shape the server used.
export const hostOf = (c) => c.host || c.host_username || '';
export const truthRows = (c) => c.truth_rows ?? c.rows ?? 0;
export const datasetOf = (c) => {
  const d = c.dataset || {};
  const id = d.dataset_id || d.id || c.dataset_id;
  return id ? { id, version: Number(d.version || c.dataset_version) || 'latest' } : null;
};
export const modeOf = (c) => c.leaderboard || c.mode || 'public';
export const teamsOf = (c) => c.teams_count ?? c.team_count ?? (typeof c.teams === 'number' ? c.teams : undefined);
export const selectionMax = (c) => Number(c.selection_max) || 2;

// 'upcoming' | 'active' | 'ended', from the timeline.
export function phase(c, now = Date.now()) {
  if (now < apiTime(c.start_at)) return 'upcoming';
  if (now < apiTime(c.end_at)) return 'active';
  return 'ended';
}

// "3 d 4 h", "12 min 5 s": the time between now and `t`.
function span(ms) {
  const s = Math.max(0, Math.round(Math.abs(ms) / 1000));
  const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600), mm = Math.floor((s % 3600) / 60);
  if (d) return `${d} d ${hh} h`;
  if (hh) return `${hh} h ${mm} min`;
  if (mm) return `${mm} min ${s % 60} s`;
  return `${s % 60} s`;
}

// The next deadline in words: "starts in …", "ends in …", "ended … ago".
export function countdown(c, now = Date.now()) {
  const p = phase(c, now);
  if (p === 'upcoming') return `starts in ${span(apiTime(c.start_at) - now)}`;
  if (p === 'active') return `ends in ${span(apiTime(c.end_at) - now)}`;
  return `ended ${span(now - apiTime(c.end_at))} ago`;
}

// An element whose text is countdown(c), kept current while the page is shown.
const ticking = new Set();
let tickTimer = null;
export function countdownEl(c, attrs = {}) {
  const el = h('span', { class: 'comp-countdown', ...attrs }, countdown(c));
  ticking.add(() => { el.textContent = countdown(c); });
  if (!tickTimer) {
    tickTimer = setInterval(() => { for (const f of ticking) f(); }, 1000);
    onLeave(() => { clearInterval(tickTimer); tickTimer = null; ticking.clear(); });
  }
  return el;
}

// A UTC time in full ("2026-12-05 14:00 UTC"), with the local time as a tooltip.
export function utc(t) {
  const ms = apiTime(t);
  if (isNaN(ms)) return '—';
  return h('time', { datetime: new Date(ms).toISOString(), title: when(ms) }, new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC');
}

export const phaseBadge = (c) => {
  const p = phase(c);
  return h('span', { class: `badge comp-${p}`, 'data-testid': 'comp-phase' }, p);
};

// Markdown into a fresh element (the renderer is its own chunk).
export function markdownEl(src, testid) {
  const el = h('div', { class: 'markdown comp-md', 'data-testid': testid });
  if (!src) { el.append(h('p', { class: 'muted' }, 'Nothing written yet.')); return el; }
  el.textContent = src;
  import('../markdown.js').then((m) => m.renderMarkdown(el, src)).catch(() => { el.textContent = src; });
  return el;
}

// The caller's team, or null when they have none (404 or an empty answer).
export async function myTeam(c) {
  try {
    const t = await api.get(`${compUrl(c.id)}/teams/mine`);
    return t && (t.id || t.team_id) ? { ...t, id: t.id || t.team_id } : (t && t.team ? t.team : null);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && !noRoute(e)) return null;
    throw e;
  }
}

// ---- the list -------------------------------------------------------------------------

const GROUPS = [['active', 'Active'], ['upcoming', 'Upcoming'], ['ended', 'Ended']];

function card(c) {
  const teams = teamsOf(c);
  return h('a', { class: 'comp-card', href: compHref(c), 'data-testid': 'comp-card', 'data-slug': c.slug },
    h('div', { class: 'comp-card-head' }, h('strong', { class: 'comp-card-title' }, c.title), phaseBadge(c)),
    h('div', { class: 'muted comp-card-host' }, hostOf(c) ? `hosted by ${hostOf(c)}` : null),
    h('div', { class: 'comp-card-foot muted' },
      countdownEl(c),
      h('span', null, c.metric || ''),
      teams !== undefined ? h('span', { 'data-testid': 'comp-teams' }, `${teams} team${teams === 1 ? '' : 's'}`) : null));
}

export async function competitionsPage() {
  let items;
  try { items = await listAll('/api/v1/competitions', {}, 1000); }
  catch (e) { if (noRoute(e)) return h('div', { class: 'page' }, h('h1', null, 'Competitions'), unavailable('Competitions')); throw e; }
  const now = Date.now();
  const by = { active: [], upcoming: [], ended: [] };
  for (const c of items) by[phase(c, now)].push(c);
  // Soonest deadline first; the most recently ended first.
  by.active.sort((a, b) => apiTime(a.end_at) - apiTime(b.end_at));
  by.upcoming.sort((a, b) => apiTime(a.start_at) - apiTime(b.start_at));
  by.ended.sort((a, b) => apiTime(b.end_at) - apiTime(a.end_at));
  const create = h('a', { class: 'button primary', href: '/competitions/new', 'data-testid': 'comp-new' }, 'Host a competition');
  return h('div', { class: 'page', 'data-testid': 'competitions' },
    h('div', { class: 'page-head' }, h('h1', null, 'Competitions'), h('span', { class: 'spacer' }), create),
    items.length ? null : h('p', { class: 'muted' }, 'No competition yet.'),
    GROUPS.filter(([k]) => by[k].length).map(([k, label]) => h('section', { class: 'comp-group', 'data-testid': `comp-group-${k}` },
      h('h2', null, `${label} (${by[k].length})`),
      h('div', { class: 'comp-grid' }, by[k].map(card)))));
}

// ---- one competition --------------------------------------------------------------------

const TABS = [['overview', 'Overview'], ['data', 'Data'], ['rules', 'Rules'], ['leaderboard', 'Leaderboard'],
  ['submissions', 'My submissions'], ['team', 'Team']];

export async function competitionPage(id, tab = 'overview') {
  let c;
  try { c = await api.get(compUrl(id)); }
  catch (e) { if (noRoute(e)) return h('div', { class: 'page' }, h('h1', null, 'Competitions'), unavailable('Competitions')); throw e; }
  const tabs = c.can_edit ? [...TABS, ['host', 'Host']] : TABS;
  if (!tabs.some(([k]) => k === tab)) tab = 'overview';
  const reload = () => navigate(location.pathname, { replace: true });
  let body;
  try {
    if (tab === 'overview') body = overviewTab(c);
    else if (tab === 'rules') body = rulesTab(c, reload);
    else if (tab === 'data') body = await dataTab(c);
    else if (tab === 'leaderboard') body = await (await import('../competitions_board.js')).boardTab(c);
    else if (tab === 'submissions') body = await (await import('../competitions_submit.js')).submissionsTab(c);
    else if (tab === 'team') body = await (await import('../competitions_team.js')).teamTab(c, reload);
    else body = await (await import('../competitions_host.js')).hostTab(c);
  } catch (e) { body = errorBox(e); }
  const teams = teamsOf(c);
  return h('div', { class: 'page comp-page', 'data-testid': 'comp-page', 'data-id': c.id },
    h('div', { class: 'page-head' }, h('h1', { 'data-testid': 'comp-title' }, c.title), phaseBadge(c)),
    h('div', { class: 'comp-meta muted' },
      hostOf(c) ? h('span', null, `hosted by ${hostOf(c)}`) : null,
      countdownEl(c, { 'data-testid': 'comp-countdown' }),
      h('span', null, `metric ${c.metric}${c.k ? ` (k = ${c.k})` : ''}`),
      teams !== undefined ? h('span', null, `${teams} teams`) : null,
      c.rules_accepted ? h('span', { class: 'ok' }, 'rules accepted') : null),
    h('nav', { class: 'tabs', 'aria-label': 'Competition' }, tabs.map(([k, label]) => h('a', {
      href: compHref(c, k), class: k === tab ? 'active' : null, 'aria-current': k === tab ? 'page' : null, 'data-testid': `comp-tab-${k}`,
    }, label))),
    h('div', { class: 'comp-tab', 'data-testid': `comp-${tab}` }, body));
}

function timeline(c) {
  const rows = [['Start', c.start_at], ['Team merger deadline', c.merge_deadline], ['Final selection deadline', c.selection_deadline], ['End', c.end_at]];
  return h('table', { class: 'table comp-timeline', 'data-testid': 'comp-timeline' },
    h('tbody', null, rows.map(([k, v]) => h('tr', { class: apiTime(v) < Date.now() ? 'muted' : null }, h('th', null, k), h('td', null, utc(v))))));
}

function overviewTab(c) {
  const caps = [`${c.daily_cap} submissions a day per team (resets at 00:00 UTC)`];
  if (c.total_cap) caps.push(`${c.total_cap} in all`);
  return h('div', { class: 'comp-overview' },
    h('div', { class: 'comp-cols' },
      markdownEl(c.overview, 'comp-overview-md'),
      h('aside', { class: 'comp-side' },
        h('h3', null, 'Timeline'), timeline(c),
        h('h3', null, 'Evaluation'),
        h('p', null, `Metric: `, h('strong', null, c.metric), c.k ? ` with k = ${c.k}` : '',
          `; ${c.higher_is_better === false ? 'lower' : 'higher'} is better.`),
        h('p', null, `Submission: a CSV with the columns `, h('code', null, [c.id_column, ...(c.target_columns || [])].filter(Boolean).join(',')),
          truthRows(c) ? ` and ${truthRows(c)} rows.` : '.'),
        h('p', null, `Leaderboard: ${{ public: 'public during the competition, on part of the test rows; the private board is revealed at the end', own_score: 'during the competition each team sees only its own score; both boards at the end', hidden: 'hidden until the end' }[modeOf(c)] || modeOf(c)}.`),
        h('p', null, caps.join(', ') + `. Teams of up to ${c.max_team_size}. Up to ${selectionMax(c)} final submissions.`))));
}

function rulesTab(c, reload) {
  const accept = h('button', {
    class: 'primary', 'data-testid': 'comp-accept-rules',
    onclick: () => busy(accept, async () => {
      await api.post(`${compUrl(c.id)}/accept-rules`, {});
      toast('Rules accepted. You can now join a team and submit.');
      reload();
    }),
  }, 'I understand and accept the rules');
  return h('div', { class: 'comp-rules' },
    markdownEl(c.rules, 'comp-rules-md'),
    h('div', { class: 'comp-accept card' }, c.rules_accepted
      ? h('p', { class: 'ok', 'data-testid': 'comp-rules-accepted' }, 'You accepted these rules.')
      : [h('p', null, 'You must accept the rules before you make a team or your first submission.'),
        phase(c) === 'ended' ? h('p', { class: 'muted' }, 'This competition has ended.') : accept]));
}

async function dataTab(c) {
  const ref = datasetOf(c);
  if (!ref) return h('p', { class: 'muted', 'data-testid': 'comp-no-data' }, 'The host has not attached a dataset yet.');
  let d = null;
  try { d = await api.get(dsUrl(ref.id)); } catch (e) { return h('div', null, errorBox(e)); }
  const v = ref.version;
  const href = d.owner && d.slug ? `/datasets/${enc(d.owner)}/${enc(d.slug)}/${v === 'latest' ? '' : `?version=${v}`}` : `/datasets/${enc(ref.id)}`;
  const mount = d.owner && d.slug ? `/home/aistudio/data/${d.owner}-${d.slug}/` : '';
  const projects = h('select', { 'aria-label': 'Project', 'data-testid': 'comp-attach-project' }, h('option', { value: '' }, 'Choose a project…'));
  listAll('/api/v1/projects', {}, 500).then((ps) => projects.append(...ps.map((p) => h('option', { value: p.id }, p.name || p.id)))).catch(() => {});
  const attach = h('button', {
    'data-testid': 'comp-attach',
    onclick: () => busy(attach, async () => {
      const pid = projects.value;
      if (!pid) throw new Error('Choose a project first.');
      const url = `/api/v1/projects/${enc(pid)}/datasets`;
      const cur = itemsOf(await api.get(url)).map((it) => ({ dataset_id: it.dataset_id, version: it.version || 'latest' }));
      if (!cur.some((it) => it.dataset_id === ref.id && String(it.version) === String(v))) {
        await api.put(url, { items: [...cur.filter((it) => it.dataset_id !== ref.id), { dataset_id: ref.id, version: v }] });
      }
      toast(`Attached to the project: kernels see it at ${mount}`);
    }),
  }, 'Attach');
  const files = h('div', { 'data-testid': 'comp-data-files' });
  if (v !== 'latest') {
    api.get(`${dsUrl(ref.id)}/versions/${v}`).then((ver) => {
      const fl = itemsOf(ver.files || []);
      if (fl.length) clear(files, h('ul', { class: 'comp-files' }, fl.slice(0, 50).map((f) => h('li', null, h('code', null, f.path), ` `, h('span', { class: 'muted' }, f.size_bytes !== undefined ? `${f.size_bytes} B` : '')))));
    }).catch(() => {});
  }
  return h('div', { class: 'comp-data' },
    h('p', null, 'The data of this competition is the dataset ', h('a', { href, 'data-testid': 'comp-dataset-link' }, d.name || `${d.owner}/${d.slug}`),
      `, version ${v}.`),
    files,
    h('div', { class: 'comp-actions' },
      h('a', { class: 'button', href: dsArchiveUrl(ref.id, v), download: `${d.slug || 'data'}-v${v}.tar`, 'data-testid': 'comp-download' }, 'Download all'),
      projects, attach),
    mount ? h('p', { class: 'muted' }, 'In a project it is attached to, kernels and jobs read it at ', h('code', null, mount), '.') : null);
}

export const newCompetitionPage = async () => (await import('../competitions_host.js')).newCompetitionPage();
