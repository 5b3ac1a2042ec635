// Widgets more than one page shows: the resource picker (jobs and the
// notebook's kernel) and the labelled figure of the stats rows (account,
// admin, a job). Generic DOM helpers are in ui.js.
import { api, ApiError } from './api.js';
import { h, coins } from './ui.js';

// A <select> of the resource classes (GET /api/v1/resources) with price and
// load; just cpu-basic when the server lists none.
export async function resourcePicker(label = 'Resource') {
  let items = [];
  try { const r = await api.get('/api/v1/resources'); items = r.items || r; }
  catch (e) { if (!(e instanceof ApiError && e.status === 404)) throw e; }
  const sel = h('select', { 'aria-label': label }, items.map((r) => h('option', { value: r.name },
    `${r.name} · ${r.cpus} CPU${r.gpus ? ` · ${r.gpu_model}` : ''} · ${coins(r.price_mcoins_per_hour)}/h · ${r.in_use}/${r.capacity} busy${r.queued ? `, ${r.queued} queued` : ''}`)));
  if (!items.length) sel.append(h('option', { value: 'cpu-basic' }, 'cpu-basic'));
  return sel;
}

// One figure with its label (value: text, a number or an element).
export function stat(label, value, testid) {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value', 'data-testid': testid }, value));
}
