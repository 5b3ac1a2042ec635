// Account: balance, free time left today, workspace usage and limit, ledger
// and a daily-usage chart, API keys.
import { api, listAll } from '../api.js';
import { h, clear, table, field, busy, toast, coins, duration, when, workspaceUsage, size } from '../ui.js';
import { app, onLeave } from '../app.js';
import { stat, plural, kernelsPanel } from '../widgets.js';
import { barChart } from '../chart.js';

// Coins spent per day over the last 14 days, from charge entries.
export function dailyUsage(entries, days = 14) {
  const out = [], byDay = new Map();
  for (const e of entries) {
    if (e.kind !== 'charge') continue;
    const d = (e.at || '').slice(0, 10);
    byDay.set(d, (byDay.get(d) || 0) + Math.abs(e.amount_mcoins) / 1000);
  }
  const now = new Date();
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - i)).toISOString().slice(0, 10);
    out.push({ label: d.slice(5), value: byDay.get(d) || 0 });
  }
  return out;
}

export async function accountPage() {
  const quotaBox = h('section', { class: 'card', 'data-testid': 'quota' });
  const ledgerBox = h('section', { class: 'card' });
  const keysBox = h('section', { class: 'card' });

  async function loadQuota() {
    const q = await api.get('/api/v1/quota');
    clear(quotaBox, h('h2', null, 'Balance'),
      h('div', { class: 'stats' },
        stat('Balance', coins(q.balance_mcoins), 'balance'),
        stat('Free GPU time left today', duration(q.free_ms_left_today), 'free-time'),
        stat('Held', coins(q.held_mcoins)),
        stat('Burn rate', `${coins(q.burn_mcoins_per_hour)}/h`),
        stat('Paid time left', paidTimeLeft(q), 'time-remaining'),
        stat('Tier', q.tier),
        workspaceStat(q.workspace)),
      q.limits ? h('p', { class: 'muted' }, `Limits: ${plural(q.limits.max_kernels, 'running kernel')}, ${plural(q.limits.max_gpus_per_job, 'GPU')} per job, sessions up to ${duration(q.limits.max_session_ms)}, idle timeout ${duration(q.limits.idle_timeout_ms)}.`) : null);
  }
  async function loadLedger() {
    const entries = await listAll('/api/v1/ledger', {}, 1000);
    const usage = dailyUsage(entries), total = usage.reduce((a, d) => a + d.value, 0);
    clear(ledgerBox, h('h2', null, 'Usage, last 14 days'),
      h('p', { class: 'muted', 'data-testid': 'usage-total' }, total ? `${total.toFixed(3)} A-coins charged in 14 days` : 'Nothing charged in the last 14 days.'),
      barChart(usage, { title: 'A-coins charged per day', unit: 'A' }),
      h('h2', null, 'Ledger'),
      table(['When', 'Kind', 'Amount', 'Balance after', 'Reason'], entries.slice(0, 100).map((e) => h('tr', null,
        h('td', null, when(e.at)), h('td', null, e.kind), h('td', { class: e.amount_mcoins < 0 ? 'neg num' : 'num' }, coins(e.amount_mcoins)),
        h('td', { class: 'num' }, coins(e.balance_after_mcoins)), h('td', null, e.reason || e.ref || ''))), { 'data-testid': 'ledger' }));
  }
  async function loadKeys() {
    const keys = await listAll('/api/v1/keys');
    const name = h('input', { placeholder: 'laptop', required: true, 'aria-label': 'Key name' });
    const env = h('select', { 'aria-label': 'Environment' }, ['prod', 'dev', 'test'].map((e) => h('option', { value: e }, e)));
    const scopeBoxes = ['read', 'write', 'run', 'serve'].concat(app.me.role === 'admin' ? ['admin'] : []).map((s) =>
      h('label', { class: 'check' }, h('input', { type: 'checkbox', value: s, checked: s !== 'admin' && s !== 'serve' }), s));
    const days = h('input', { type: 'number', min: 1, placeholder: 'never', 'aria-label': 'Expires in days', style: { width: '7em' } });
    const shown = h('div');
    const form = h('form', {
      class: 'inline-form',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const body = { name: name.value.trim(), env: env.value, scopes: scopeBoxes.map((l) => l.firstChild).filter((c) => c.checked).map((c) => c.value) };
        if (days.value) body.expires_in_days = Number(days.value);
        const k = await busy(form.querySelector('button'), () => api.post('/api/v1/keys', body));
        if (!k) return;
        await loadKeys();
        keysBox.prepend(h('div', { class: 'key-once', role: 'alert' },
          h('strong', null, 'Your new API key: copy it now, it will not be shown again.'),
          h('code', { 'data-testid': 'new-key' }, k.key),
          h('button', { class: 'small', onclick: () => navigator.clipboard && navigator.clipboard.writeText(k.key).then(() => toast('Copied')) }, 'Copy')));
      },
    }, name, env, scopeBoxes, field('Expires in days', days), h('button', { type: 'submit', class: 'primary' }, 'Create key'));
    const rows = keys.map((k) => {
      const rev = h('button', { class: 'small danger', onclick: () => { if (confirm(`Revoke ${k.name}?`)) busy(rev, async () => { await api.del(`/api/v1/keys/${encodeURIComponent(k.id)}`); toast('Key revoked'); await loadKeys(); }); } }, 'Revoke');
      const revoked = k.revoked || k.revoked_at;
      return h('tr', null, h('td', null, k.name), h('td', null, h('code', null, k.prefix || '')), h('td', null, k.env), h('td', null, (k.scopes || []).join(', ')),
        h('td', null, when(k.created_at)), h('td', null, k.expires_at ? when(k.expires_at) : 'never'), h('td', null, k.last_used_at ? when(k.last_used_at) : ''), h('td', null, revoked ? 'revoked' : rev));
    });
    clear(keysBox, h('h2', null, 'API keys'), form, shown, table(['Name', 'Prefix', 'Env', 'Scopes', 'Created', 'Expires', 'Last used', ''], rows, { 'data-testid': 'keys' }));
  }
  await Promise.all([loadQuota(), loadLedger(), loadKeys()]);
  const timer = setInterval(() => loadQuota().catch(() => {}), 15000);
  const kernels = kernelsPanel({ onChange: () => loadQuota().catch(() => {}) });
  onLeave(() => { clearInterval(timer); kernels.stop(); });
  return h('div', { class: 'page' }, h('h1', null, 'Account'),
    h('p', { class: 'muted' }, `${app.me.username} · ${app.me.email} · ${app.me.role} · member since ${when(app.me.created_at)}`),
    quotaBox, kernels.el, keysBox, ledgerBox);
}

// How long the balance lasts at the current burn rate; with nothing charged
// now (no paid work running) it says so, and what a zero balance means,
// instead of "unlimited".
export function paidTimeLeft(q) {
  if (q.ms_remaining !== null && q.ms_remaining !== undefined && q.ms_remaining >= 0) return duration(q.ms_remaining);
  if (q.balance_mcoins <= 0) return 'nothing charged now; with no coins only free classes and free GPU time can run';
  return 'nothing charged now (no paid work running)';
}

// The user's workspaces: the limit is per project, so the stat shows the
// fullest project against it, and the total over all of them below.
function workspaceStat(w) {
  const u = workspaceUsage(w);
  if (!u) return null;
  const label = u.limit && u.projects !== null ? 'Workspace (fullest project)' : 'Workspace';
  const el = stat(label, u.text, 'workspace');
  el.append(h('div', { class: 'muted small-text' },
    `${size(u.total)} in ${u.projects ?? 'all'} project${u.projects === 1 ? '' : 's'}${u.limit ? `; each may hold ${size(u.limit)}` : ''}`));
  return el;
}
