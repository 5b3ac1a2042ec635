// Datasets (issue 15): the list (search, mine/shared/public, tag), "New
// dataset", and one dataset's page: the card (Markdown), license, tags and
// visibility, its versions, the selected version's files with previews and
// downloads (datasets_view.js), how to use it in a kernel, and for the owner
// editing the card, the draft (uploads, publish: datasets_draft.js) and
// deleting versions or the dataset. Lazily loaded: nothing here is in the
// entry chunk. A dataset is reached by id (/datasets/{id}) or by its
// readable name (/datasets/{owner}/{slug}), which the links use.
import '../datasets.css';
import { api, listAll, dsUrl, ApiError, noRoute } from '../api.js';
import { h, clear, busy, toast, when, size, modal, field, errorBox, unavailable, table } from '../ui.js';
import { app, navigate, onLeave } from '../app.js';
import { versionView } from '../datasets_view.js';
import { draftView } from '../datasets_draft.js';

const enc = encodeURIComponent;
export const datasetHref = (d) => `/datasets/${enc(d.owner)}/${enc(d.slug)}`;
const LICENSES = ['', 'CC0-1.0', 'CC-BY-4.0', 'CC-BY-SA-4.0', 'CC-BY-NC-4.0', 'ODbL-1.0', 'MIT', 'Apache-2.0', 'other'];

function notAvailable(title) { return h('div', { class: 'page' }, h('h1', null, title), unavailable('Datasets')); }
const visBadge = (v) => h('span', { class: `badge ${v}`, 'data-testid': 'ds-visibility' }, v);
const tagList = (tags) => (tags && tags.length ? h('span', { class: 'ds-tags' }, tags.map((t) => h('span', { class: 'ds-tag' }, t))) : null);
const parseTags = (s) => s.split(',').map((t) => t.trim()).filter(Boolean);
// A slug from a name as the server makes one: lowercase, [a-z0-9-].
const slugify = (s) => s.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64);

// The card's fields as a form: for "New dataset" and "Edit card".
function cardForm(d = {}) {
  const name = h('input', { value: d.name || '', required: true, maxlength: 100, 'data-testid': 'ds-name', placeholder: 'Iris flowers' });
  const slug = h('input', { value: d.slug || '', maxlength: 64, 'data-testid': 'ds-slug', placeholder: 'iris-flowers', pattern: '[a-z0-9][a-z0-9\\-]*' });
  let slugTouched = !!d.slug;
  slug.addEventListener('input', () => { slugTouched = true; });
  name.addEventListener('input', () => { if (!slugTouched && !d.id) slug.value = slugify(name.value); });
  const desc = h('textarea', { rows: 8, 'data-testid': 'ds-description', placeholder: 'What is in it, where it comes from, how it was collected (Markdown)' });
  desc.value = d.description || '';
  const license = h('select', { 'data-testid': 'ds-license' }, LICENSES.map((l) => h('option', { value: l, selected: (d.license || '') === l }, l || '(none)')));
  if (d.license && !LICENSES.includes(d.license)) license.append(h('option', { value: d.license, selected: true }, d.license));
  const tags = h('input', { value: (d.tags || []).join(', '), 'data-testid': 'ds-tags', placeholder: 'tabular, images' });
  const vis = h('select', { 'data-testid': 'ds-vis' }, ['private', 'unlisted', 'public'].map((v) => h('option', { value: v, selected: (d.visibility || 'private') === v }, v)));
  const err = h('div', { 'data-testid': 'ds-form-error' });
  const el = h('div', { class: 'ds-form' },
    field('Name', name), d.id ? null : field('Slug (in the URL and the mount path)', slug),
    field('Description', desc), h('div', { class: 'ds-form-row' }, field('License', license), field('Tags (comma separated)', tags), field('Visibility', vis)), err);
  const value = () => {
    const v = { name: name.value.trim(), description: desc.value, license: license.value, tags: parseTags(tags.value), visibility: vis.value };
    if (!d.id && slug.value.trim()) v.slug = slug.value.trim();
    return v;
  };
  return { el, value, err, focus: () => name.focus() };
}

// A dialog that keeps itself open until `submit(value)` resolves (errors
// shown inside it); resolves with its result or null.
function formDialog({ title, form, okLabel, testid, submit }) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { class: 'modal ds-dialog', 'data-testid': testid, 'aria-label': title });
    const ok = h('button', { type: 'submit', class: 'primary', 'data-testid': `${testid}-ok` }, okLabel);
    const close = (v) => { if (dlg.open) dlg.close(); dlg.remove(); resolve(v); };
    const f = h('form', {
      method: 'dialog',
      onsubmit: async (ev) => {
        ev.preventDefault();
        clear(form.err);
        ok.disabled = true;
        try { close(await submit(form.value())); } catch (e) { clear(form.err, errorBox(e)); } finally { ok.disabled = false; }
      },
    }, h('h2', null, title), form.el, h('div', { class: 'modal-actions' }, ok, h('button', { type: 'button', onclick: () => close(null) }, 'Cancel')));
    dlg.append(f);
    dlg.addEventListener('cancel', (ev) => { ev.preventDefault(); close(null); });
    document.body.append(dlg);
    dlg.showModal();
    form.focus();
  });
}

export async function newDatasetDialog() {
  return formDialog({
    title: 'New dataset', form: cardForm(), okLabel: 'Create dataset', testid: 'new-dataset',
    submit: (v) => api.post('/api/v1/datasets', v),
  });
}

// ---- the list ---------------------------------------------------------------------

const FILTERS = [['all', 'All'], ['mine', 'Mine'], ['shared', 'Shared with me'], ['public', 'Public']];

export async function datasetsPage() {
  const params = new URLSearchParams(location.search);
  const state = { q: params.get('q') || '', filter: params.get('filter') || 'all', tag: params.get('tag') || '' };
  const q = h('input', { type: 'search', value: state.q, placeholder: 'Search datasets', 'aria-label': 'Search datasets', 'data-testid': 'ds-search' });
  const tag = h('input', { value: state.tag, placeholder: 'tag', 'aria-label': 'Tag', 'data-testid': 'ds-tag-filter', style: { width: '8em' } });
  const filters = h('div', { class: 'ds-filters', role: 'group', 'aria-label': 'Whose datasets' });
  const grid = h('div', { class: 'ds-grid', 'data-testid': 'datasets' });
  let seq = 0;

  async function load(first = false) {
    const my = ++seq;
    const query = { q: state.q || undefined, tag: state.tag || undefined };
    if (state.filter === 'mine') query.owner = app.me.username;
    let items;
    try { items = await listAll('/api/v1/datasets', query, 500); }
    catch (e) { if (first) throw e; if (my === seq) clear(grid, errorBox(e)); return; }
    if (my !== seq) return;
    const mine = (d) => d.owner === app.me.username || d.owner_id === app.me.id;
    if (state.filter === 'shared') items = items.filter((d) => !mine(d) && d.visibility !== 'public');
    if (state.filter === 'public') items = items.filter((d) => d.visibility === 'public');
    const url = new URLSearchParams();
    if (state.q) url.set('q', state.q);
    if (state.filter !== 'all') url.set('filter', state.filter);
    if (state.tag) url.set('tag', state.tag);
    history.replaceState(null, '', `/datasets${[...url].length ? `?${url}` : ''}`);
    clear(grid, items.length ? items.map(card) : h('p', { class: 'muted' }, state.q || state.tag || state.filter !== 'all' ? 'No dataset matches.' : 'No datasets yet. Create one, or ask for one to be shared with you.'));
  }
  function card(d) {
    const sizeEl = h('span', { class: 'ds-size' }, d.size_bytes !== undefined ? size(d.size_bytes) : '');
    // The list has no sizes (yet): the latest version's, once it is known.
    if (d.size_bytes === undefined && d.latest_version > 0) {
      api.get(`${dsUrl(d.id)}/versions`).then((r) => {
        const v = (r.items || r || []).find((x) => x.number === d.latest_version);
        if (v) sizeEl.textContent = size(v.size_bytes);
      }).catch(() => {});
    }
    return h('a', { class: 'ds-card', href: datasetHref(d), 'data-testid': 'ds-card', 'data-slug': d.slug },
      h('div', { class: 'ds-card-head' }, h('strong', { class: 'ds-card-name' }, d.name), visBadge(d.visibility)),
      h('div', { class: 'muted ds-card-owner' }, `${d.owner}/${d.slug}`),
      tagList(d.tags),
      h('div', { class: 'ds-card-foot muted' },
        d.latest_version ? `v${d.latest_version}` : 'no version yet', sizeEl, h('span', null, `updated ${when(d.updated_at)}`)));
  }
  const setFilter = (f) => { state.filter = f; for (const b of filters.children) b.setAttribute('aria-pressed', String(b.dataset.f === f)); load(); };
  for (const [f, label] of FILTERS) filters.append(h('button', { type: 'button', class: 'small', 'data-f': f, 'data-testid': `ds-filter-${f}`, 'aria-pressed': String(f === state.filter), onclick: () => setFilter(f) }, label));
  let timer = null;
  q.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => { state.q = q.value.trim(); load(); }, 250); });
  tag.addEventListener('change', () => { state.tag = tag.value.trim(); load(); });
  onLeave(() => clearTimeout(timer));

  try { await load(true); }
  catch (e) { if (noRoute(e)) return notAvailable('Datasets'); throw e; }
  const create = h('button', {
    class: 'primary', 'data-testid': 'new-dataset-button',
    onclick: async () => { const d = await newDatasetDialog(); if (d) { toast(`Created ${d.name}`); navigate(datasetHref(d)); } },
  }, 'New dataset');
  return h('div', { class: 'page' },
    h('div', { class: 'page-head' }, h('h1', null, 'Datasets'), h('span', { class: 'spacer' }), create),
    h('div', { class: 'ds-toolbar' }, q, filters, tag),
    grid);
}

// ---- one dataset --------------------------------------------------------------------

// /datasets/{owner}/{slug}: the list searched for the slug, then that owner's.
async function resolve(owner, slug) {
  const items = await listAll('/api/v1/datasets', { owner, q: slug }, 500);
  const d = items.find((x) => x.owner === owner && x.slug === slug);
  if (!d) throw new ApiError(404, 'not_found', `No dataset ${owner}/${slug} that you can see`);
  return d;
}

export async function datasetPage(idOrOwner, slug) {
  let d;
  try { d = slug === undefined ? await api.get(dsUrl(idOrOwner)) : await resolve(idOrOwner, slug); }
  catch (e) {
    if (noRoute(e)) return notAvailable('Dataset');
    throw e;
  }
  if (slug === undefined && d.owner && d.slug) history.replaceState(null, '', datasetHref(d) + location.search);
  const page = h('div', { class: 'page ds-page', 'data-testid': 'dataset-page', 'data-id': d.id });
  const rerender = async () => { const next = await datasetPage(d.id); page.replaceWith(next); };
  let versions = [];
  try { const r = await api.get(`${dsUrl(d.id)}/versions`); versions = Array.isArray(r) ? r : r.items || []; }
  catch (e) { if (!noRoute(e)) throw e; }
  versions.sort((a, b) => b.number - a.number);
  const selected = Number(new URLSearchParams(location.search).get('v')) || (versions[0] && versions[0].number) || 0;
  const own = !!d.can_write;
  // Why a delete was refused (409: a kernel or job uses it, a project pins it).
  const refused = h('div', { 'data-testid': 'ds-refused', 'aria-live': 'polite' });
  const refuse = (e) => clear(refused, errorBox(`Not deleted: ${e.message}`));

  // the card
  const cardBody = h('div', { class: 'markdown ds-card-md', 'data-testid': 'ds-card-md' });
  if (d.description) import('../markdown.js').then((m) => m.renderMarkdown(cardBody, d.description)).catch(() => { cardBody.textContent = d.description; });
  else cardBody.append(h('p', { class: 'muted' }, own ? 'No description yet: "Edit card" adds one.' : 'No description.'));
  const edit = own ? h('button', {
    'data-testid': 'ds-edit', onclick: async () => {
      const r = await formDialog({ title: 'Edit card', form: cardForm(d), okLabel: 'Save', testid: 'edit-dataset', submit: (v) => api.patch(dsUrl(d.id), v) });
      if (r) { toast('Saved'); await rerender(); }
    },
  }, 'Edit card') : null;
  // Sharing a private dataset for reading (POST/DELETE .../shares/{username};
  // the server has no list of shares to show).
  const share = own && d.visibility === 'private' ? h('button', {
    'data-testid': 'ds-share', onclick: async () => {
      const who = h('input', { placeholder: 'username', 'aria-label': 'Username', 'data-testid': 'ds-share-user', required: true });
      const err = h('div', { 'data-testid': 'ds-share-error' });
      await formDialog({
        title: `Share ${d.name}`, testid: 'share-dataset', okLabel: 'Share',
        form: { el: h('div', null, h('p', { class: 'muted' }, 'The user can see, download and attach it; only you change it. "Stop sharing" takes it back.'), field('Username', who), err),
          value: () => who.value.trim(), err, focus: () => who.focus() },
        submit: async (user) => {
          if (!user) throw new Error('Name a user');
          await api.post(`${dsUrl(d.id)}/shares/${enc(user)}`);
          toast(`Shared with ${user}`);
          return user;
        },
      });
    },
  }, 'Share…') : null;
  const unshare = own && d.visibility === 'private' ? h('button', {
    'data-testid': 'ds-unshare', onclick: async () => {
      const who = h('input', { placeholder: 'username', 'aria-label': 'Username', 'data-testid': 'ds-unshare-user', required: true });
      const err = h('div');
      await formDialog({
        title: 'Stop sharing', testid: 'unshare-dataset', okLabel: 'Stop sharing',
        form: { el: h('div', null, field('Username', who), err), value: () => who.value.trim(), err, focus: () => who.focus() },
        submit: async (user) => { await api.del(`${dsUrl(d.id)}/shares/${enc(user)}`); toast(`${user} no longer sees it`); return user; },
      });
    },
  }, 'Stop sharing…') : null;
  const del = own ? h('button', {
    class: 'danger', 'data-testid': 'ds-delete', onclick: async () => {
      const ok = await modal({ title: `Delete ${d.name}?`, message: 'Every version and file of this dataset goes, and projects that attach it lose it. This cannot be undone.', actions: [{ label: 'Delete dataset', value: true, kind: 'danger', testid: 'ds-delete-confirm' }] });
      if (!ok) return;
      try { await api.del(dsUrl(d.id)); toast(`Deleted ${d.name}`); navigate('/datasets'); }
      catch (e) { if (e.status === 409) refuse(e); else toast(e.message, 'error'); }
    },
  }, 'Delete dataset') : null;

  // versions
  const vRows = versions.map((v) => {
    const rm = own ? h('button', {
      class: 'small danger', 'data-testid': `ds-version-delete-${v.number}`,
      onclick: () => busy(rm, async () => {
        const ok = await modal({ title: `Delete version ${v.number}?`, message: 'Its files go unless another version has them. Jobs that used it keep their record; its number is never reused.', actions: [{ label: 'Delete version', value: true, kind: 'danger', testid: 'ds-version-delete-confirm' }] });
        if (!ok) return;
        try { await api.del(`${dsUrl(d.id)}/versions/${v.number}`); toast(`Deleted version ${v.number}`); history.replaceState(null, '', location.pathname); await rerender(); }
        catch (e) { if (e.status === 409) refuse(e); else throw e; }
      }),
    }, 'Delete') : null;
    return h('tr', { class: v.number === selected ? 'sel' : null, 'data-version': v.number },
      h('td', null, h('a', { href: `${datasetHref(d)}?v=${v.number}` }, `v${v.number}`)),
      h('td', null, v.message || h('span', { class: 'muted' }, '—')),
      h('td', { class: 'num' }, size(v.size_bytes)), h('td', { class: 'num' }, v.file_count ?? (v.files ? v.files.length : '')),
      h('td', null, when(v.created_at)), h('td', null, sourceText(v.source)), h('td', null, rm));
  });

  const view = selected ? await versionView(d, selected) : h('section', { class: 'card' }, h('p', { class: 'muted', 'data-testid': 'ds-no-version' }, own ? 'No version yet: upload files to the draft below and publish one.' : 'No version published yet.'));
  const draft = own ? await draftView(d, { latest: versions[0], onPublished: async (v) => { history.replaceState(null, '', `${datasetHref(d)}?v=${v.number}`); await rerender(); } }) : null;
  page.append(...[
    h('div', { class: 'page-head' },
      h('h1', null, h('a', { href: '/datasets' }, 'Datasets'), ' / ', h('span', { 'data-testid': 'ds-title' }, d.name)),
      h('span', { class: 'spacer' }), edit, share, unshare, del),
    h('div', { class: 'ds-meta' }, h('code', null, `${d.owner}/${d.slug}`), visBadge(d.visibility),
      d.license ? h('span', { 'data-testid': 'ds-license-shown' }, `License: ${d.license}`) : h('span', { class: 'muted' }, 'No license given'),
      tagList(d.tags), h('span', { class: 'muted' }, `updated ${when(d.updated_at)}`)),
    refused,
    h('section', { class: 'card' }, cardBody),
    h('section', { class: 'card' }, h('h2', null, 'Versions'), table(['Version', 'Message', 'Size', 'Files', 'Published', 'Source', ''], vRows, { 'data-testid': 'ds-versions' })),
    ...[view].flat(),
    draft].filter(Boolean));   // the DOM's append would write "null"
  return page;
}

function sourceText(s) {
  if (!s) return 'upload';
  if (typeof s === 'string') return s;
  if (s.job_id) return h('a', { href: `/jobs/${enc(s.job_id)}` }, `job #${s.job_id}`);
  if (s.project_id) return h('a', { href: `/projects/${enc(s.project_id)}` }, 'project');
  return JSON.stringify(s);
}
