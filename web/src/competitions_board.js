// A competition's Leaderboard tab: the public board (or, after the end, the
// private one), 50 rows a page, the caller's team highlighted. What the
// server shows depends on the competition's mode and it alone decides: in
// `own_score` a participant's answer holds only their team (without a rank),
// in `hidden` it refuses until the end; the page says so rather than guess.
import { api, compUrl, apiTime, itemsOf, ApiError } from './api.js';
import { h, clear, errorBox } from './ui.js';
import { myTeam, modeOf, phase, utc } from './pages/competitions.js';

const PAGE = 50;

const fmtScore = (s) => (s === undefined || s === null ? '—' : Number.isInteger(s) ? String(s) : Number(s).toPrecision(6).replace(/\.?0+$/, ''));

export async function boardTab(c) {
  const ended = phase(c) === 'ended';
  const team = await myTeam(c).catch(() => null);
  const state = { board: ended ? 'private' : 'public', offset: 0, cursors: [null] };
  const body = h('div', { 'data-testid': 'comp-board' });
  const note = h('p', { class: 'muted', 'data-testid': 'comp-board-note' });
  const pager = h('div', { class: 'comp-pager' });
  const boards = h('div', { class: 'ds-filters', role: 'group', 'aria-label': 'Board' });
  let seq = 0;

  const mine = (it) => team && ((it.team_id !== undefined && String(it.team_id) === String(team.id)) || (it.team_id === undefined && it.team === team.name));

  async function load() {
    const my = ++seq;
    const query = { board: state.board, limit: PAGE, offset: state.offset };
    const cursor = state.cursors[state.cursors.length - 1];
    if (cursor) query.cursor = cursor;
    let r;
    try { r = await api.get(`${compUrl(c.id)}/leaderboard`, { query }); }
    catch (e) {
      if (my !== seq) return;
      clear(pager);
      if (e instanceof ApiError && (e.status === 403 || e.status === 409)) {
        clear(body, h('div', { class: 'unavailable', 'data-testid': 'comp-board-refused' },
          h('strong', null, state.board === 'private' ? 'The private leaderboard is revealed when the competition ends.' : 'The leaderboard is hidden.'),
          h('p', null, e.message)));
      } else clear(body, errorBox(e));
      return;
    }
    if (my !== seq) return;
    const items = itemsOf(r);
    const total = r.total ?? r.total_teams;
    const rows = items.map((it) => h('tr', { class: mine(it) ? 'sel comp-mine' : null, 'data-testid': 'comp-board-row', 'data-team': it.team_id ?? it.team },
      h('td', { class: 'num' }, it.rank ?? '—'),
      h('td', null, it.team ?? it.team_name ?? '', mine(it) ? h('span', { class: 'badge comp-you' }, 'your team') : null),
      h('td', { class: 'num', 'data-testid': 'comp-board-score' }, fmtScore(it.score)),
      h('td', null, utc(it.submitted_at))));
    clear(body, h('table', { class: 'table comp-board-table' },
      h('thead', null, h('tr', null, h('th', { class: 'num' }, '#'), h('th', null, 'Team'), h('th', { class: 'num' }, 'Score'), h('th', null, 'Submitted'))),
      h('tbody', null, rows.length ? rows : h('tr', null, h('td', { colspan: 4, class: 'muted' }, 'No scored submission yet.')))));
    const hasNext = r.next_cursor ? true : total !== undefined ? state.offset + items.length < total : items.length === PAGE;
    const prev = h('button', { class: 'small', disabled: state.offset === 0, 'data-testid': 'comp-board-prev', onclick: () => { state.offset = Math.max(0, state.offset - PAGE); if (state.cursors.length > 1) state.cursors.pop(); load(); } }, '← Previous');
    const next = h('button', { class: 'small', disabled: !hasNext, 'data-testid': 'comp-board-next', onclick: () => { state.offset += PAGE; state.cursors.push(r.next_cursor || null); load(); } }, 'Next →');
    clear(pager, prev, h('span', { class: 'muted' }, items.length ? `${state.offset + 1}–${state.offset + items.length}${total !== undefined ? ` of ${total}` : ''}` : ''), next);
  }

  const mode = modeOf(c);
  note.textContent = ended
    ? 'The competition has ended: the private leaderboard ranks each team by its selected submissions on the rows held back.'
    : mode === 'own_score' ? 'During the competition you see only your own team\'s score (the host chose "only my own score").'
      : mode === 'hidden' ? 'The leaderboard is hidden until the end of the competition.'
        : `The public leaderboard is computed on part of the test rows; the final ranking is on the rest, revealed at ${new Date(apiTime(c.end_at)).toISOString().slice(0, 16).replace('T', ' ')} UTC.`;
  const setBoard = (b) => {
    state.board = b; state.offset = 0; state.cursors = [null];
    for (const x of boards.children) x.setAttribute('aria-pressed', String(x.dataset.b === b));
    load();
  };
  for (const [b, label] of [['public', 'Public'], ['private', 'Private']]) {
    boards.append(h('button', {
      type: 'button', class: 'small', 'data-b': b, 'data-testid': `comp-board-${b}`, 'aria-pressed': String(b === state.board),
      disabled: b === 'private' && !ended, title: b === 'private' && !ended ? 'Revealed when the competition ends' : null,
      onclick: () => setBoard(b),
    }, label));
  }
  await load();
  return h('div', null, h('div', { class: 'comp-board-head' }, boards, note), body, pager);
}
