// A competition's Team tab: without a team, create one or join one that
// invited you (by the team's number, which its members see here and the
// leaderboard shows); with one, its members and pending invites, invite by
// username, ask another team to merge (the other team accepts by asking
// back; both must fit the size and caps), and leave (only while the team
// has no submission: the server says why otherwise). Everything before the
// merge deadline; the server's refusals are shown as it words them.
import { api, compUrl, apiTime } from './api.js';
import { h, busy, toast, field } from './ui.js';
import { compHref, myTeam, utc } from './pages/competitions.js';

export async function teamTab(c, reload) {
  const base = `${compUrl(c.id)}/teams`;
  const open = Date.now() < apiTime(c.merge_deadline);
  if (!c.rules_accepted) {
    return h('div', { class: 'card', 'data-testid': 'comp-need-rules' },
      h('p', null, 'Accept the rules before you make or join a team.'),
      h('a', { class: 'button primary', href: compHref(c, 'rules') }, 'Read and accept the rules'));
  }
  const team = await myTeam(c);
  const closed = open ? null : h('p', { class: 'muted' }, 'The team merger deadline has passed: teams are final.');
  if (!team) {
    const name = h('input', { placeholder: 'Team name', maxlength: 100, 'data-testid': 'comp-team-name', 'aria-label': 'Team name' });
    const create = h('button', {
      class: 'primary', 'data-testid': 'comp-team-create',
      onclick: () => busy(create, async () => {
        if (!name.value.trim()) throw new Error('Give the team a name.');
        await api.post(base, { name: name.value.trim() });
        toast('Team created.');
        reload();
      }),
    }, 'Create team');
    const tid = h('input', { placeholder: 'Team number', inputmode: 'numeric', 'data-testid': 'comp-join-id', 'aria-label': 'Team number' });
    const join = h('button', {
      'data-testid': 'comp-team-join',
      onclick: () => busy(join, async () => {
        if (!tid.value.trim()) throw new Error('Which team invited you? Give its number.');
        await api.post(`${base}/${encodeURIComponent(tid.value.trim())}/join`, {});
        toast('You joined the team.');
        reload();
      }),
    }, 'Join');
    return h('div', { class: 'comp-team', 'data-testid': 'comp-no-team' },
      h('p', null, 'You are not in a team. Your first submission makes you a team of one; or:'),
      closed,
      h('div', { class: 'card' }, h('h3', null, 'Create a team'), h('div', { class: 'inline-form' }, name, create)),
      h('div', { class: 'card' }, h('h3', null, 'Join a team that invited you'),
        h('p', { class: 'muted' }, 'A member of the team invites you by your username and tells you its number.'),
        h('div', { class: 'inline-form' }, tid, join)));
  }
  const members = team.members || [];
  const invited = team.invited || [];
  const user = h('input', { placeholder: 'username', 'data-testid': 'comp-invite-user', 'aria-label': 'Username to invite' });
  const invite = h('button', {
    'data-testid': 'comp-invite', disabled: !open,
    onclick: () => busy(invite, async () => {
      if (!user.value.trim()) throw new Error('Whom to invite? Give a username.');
      await api.post(`${base}/${team.id}/invites`, { username: user.value.trim() });
      toast(`Invited ${user.value.trim()}: they join from this tab with team number ${team.id}.`);
      reload();
    }),
  }, 'Invite');
  const other = h('input', { placeholder: 'Other team\'s number', inputmode: 'numeric', 'data-testid': 'comp-merge-id', 'aria-label': 'Other team number' });
  const merge = h('button', {
    'data-testid': 'comp-merge', disabled: !open,
    onclick: () => busy(merge, async () => {
      const o = Number(other.value.trim());
      if (!o) throw new Error('Give the other team\'s number.');
      const r = await api.post(`${base}/${team.id}/merge`, { other_team_id: o });
      toast(r && r.merged ? 'The teams are merged.' : `Asked team ${o} to merge; they accept by asking back.`);
      reload();
    }),
  }, 'Request merge');
  const leave = h('button', {
    class: 'danger', 'data-testid': 'comp-leave', disabled: !open,
    onclick: () => busy(leave, async () => {
      await api.del(`${base}/mine`);
      toast('You left the team.');
      reload();
    }),
  }, 'Leave team');
  return h('div', { class: 'comp-team', 'data-testid': 'comp-my-team', 'data-team': team.id },
    h('h2', null, team.name, h('span', { class: 'muted' }, ` #${team.id}`)),
    closed,
    h('p', { class: 'muted' }, `${members.length} of ${c.max_team_size} members · ${team.submissions ?? 0} submissions, ${team.submissions_today ?? 0} today · merge deadline `, utc(c.merge_deadline)),
    h('table', { class: 'table' }, h('tbody', null, members.map((m) => h('tr', { 'data-testid': 'comp-member' }, h('td', null, m.username || `user ${m.user_id}`))),
      invited.map((u) => h('tr', { class: 'muted' }, h('td', null, `${typeof u === 'object' ? u.username || u.user_id : `user ${u}`} (invited)`))))),
    team.merge_request_to ? h('p', { class: 'muted', 'data-testid': 'comp-merge-pending' }, `Waiting for team #${team.merge_request_to} to accept the merge.`) : null,
    h('div', { class: 'card' }, h('h3', null, 'Invite a member'), h('div', { class: 'inline-form' }, field('Username', user), invite)),
    h('div', { class: 'card' }, h('h3', null, 'Merge with another team'),
      h('p', { class: 'muted' }, 'Both teams ask; the merged team must fit the size limit and the submission caps.'),
      h('div', { class: 'inline-form' }, field('Team number', other), merge)),
    h('div', { class: 'comp-actions' }, leave, h('span', { class: 'muted' }, 'A team that has submitted cannot be left.')));
}
