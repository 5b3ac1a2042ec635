// The notebook side panel's "Datasets" section: the datasets attached to the
// project (name, pinned version or "latest", where kernels see them, a
// copy-path button, Detach) and "Attach" (search the datasets the user can
// see, pick a version or latest). The list is the project's
// (GET/PUT /api/v1/projects/{id}/datasets, replaced whole); a running kernel
// mounts what was attached when it started, so changes show after a restart.
import './datasets_panel.css';
import { api, listAll, dsUrl, dsMountPath, noRoute } from './api.js';
import { h, clear, toast, errorBox } from './ui.js';
import { copyText } from './datasets_view.js';

const enc = encodeURIComponent;
const listUrl = (pid) => `/api/v1/projects/${enc(pid)}/datasets`;
const itemsOf = (r) => (Array.isArray(r) ? r : (r && r.items) || []);
// What PUT takes back: {dataset_id, version: N|"latest"}.
const plain = (it) => ({ dataset_id: it.dataset_id, version: it.version === undefined || it.version === null || it.version === 0 ? 'latest' : it.version });

export function datasetsPanel(nb, { active }) {
  const pid = nb.projectId;
  const list = h('ul', { class: 'dsp-list', 'data-testid': 'side-datasets-list' });
  const msg = h('div', { class: 'dsp-msg' });
  let items = [], loaded = false, seq = 0;

  async function refresh() {
    if (!active()) return;
    const my = ++seq;
    let r;
    try { r = await api.get(listUrl(pid)); }
    catch (e) {
      if (my !== seq) return;
      clear(list);
      clear(msg, noRoute(e) ? h('p', { class: 'muted' }, 'Datasets are not available on this server.') : errorBox(e));
      return;
    }
    if (my !== seq) return;
    items = itemsOf(r);
    loaded = true;
    clear(msg);
    clear(list, items.length ? items.map(row) : h('li', { class: 'muted' }, 'No dataset attached.'));
  }

  async function save(next, what) {
    await api.put(listUrl(pid), { items: next.map(plain) });
    toast(`${what}. A running kernel sees the change after a restart.`);
    await refresh();
  }

  function row(it) {
    const name = it.owner && it.slug ? `${it.owner}/${it.slug}` : it.dataset_id;
    const mount = it.mount_path || it.path || (it.owner && it.slug ? dsMountPath(it) : '');
    const ver = it.version === 'latest' || !it.version ? `latest${it.resolved_version || it.latest_version ? ` (v${it.resolved_version || it.latest_version})` : ''}` : `v${it.version}`;
    const detach = h('button', {
      class: 'link', 'data-testid': 'dsp-detach', title: `Detach ${name}`,
      onclick: async () => {
        detach.disabled = true;
        try { await save(items.filter((x) => x !== it), `Detached ${name}`); } catch (e) { toast(e.message, 'error'); detach.disabled = false; }
      },
    }, 'Detach');
    return h('li', { class: 'dsp-item', 'data-testid': 'dsp-item', 'data-dataset': it.dataset_id },
      h('div', { class: 'dsp-line' },
        h('a', { href: it.owner && it.slug ? `/datasets/${enc(it.owner)}/${enc(it.slug)}` : `/datasets/${enc(it.dataset_id)}`, class: 'dsp-name', title: it.name || name }, it.name || name),
        h('span', { class: 'muted dsp-ver' }, ver)),
      h('div', { class: 'dsp-line' },
        h('code', { class: 'dsp-path', title: mount, 'data-testid': 'dsp-path' }, mount),
        h('button', { class: 'link', title: 'Copy the path', 'aria-label': `Copy the path of ${name}`, onclick: () => copyText(mount) }, 'Copy'),
        detach));
  }

  async function attach() {
    const found = h('ul', { class: 'dsp-found', 'data-testid': 'dsp-found' });
    const version = h('select', { 'aria-label': 'Version', 'data-testid': 'dsp-version', disabled: true }, h('option', { value: 'latest' }, 'latest'));
    let chosen = null, sseq = 0;
    const q = h('input', { type: 'search', placeholder: 'Search datasets', 'aria-label': 'Search datasets', 'data-testid': 'dsp-search' });
    const err = h('div');
    const ok = h('button', { class: 'primary', 'data-testid': 'dsp-attach-ok', disabled: true }, 'Attach');
    async function search() {
      const my = ++sseq;
      let r;
      try { r = await listAll('/api/v1/datasets', { q: q.value.trim() || undefined }, 100); }
      catch (e) { if (my === sseq) clear(found, errorBox(e)); return; }
      if (my !== sseq) return;
      const attached = new Set(items.map((x) => x.dataset_id));
      const usable = r.filter((d) => d.latest_version > 0 && !attached.has(d.id));
      clear(found, usable.length ? usable.map((d) => h('li', null, h('button', {
        class: 'dsp-pick', 'data-testid': 'dsp-pick', 'data-slug': d.slug, 'aria-pressed': 'false',
        onclick: async (ev) => {
          for (const b of found.querySelectorAll('.dsp-pick')) b.setAttribute('aria-pressed', 'false');
          ev.currentTarget.setAttribute('aria-pressed', 'true');
          chosen = d;
          ok.disabled = false;
          clear(version, h('option', { value: 'latest' }, `latest (v${d.latest_version})`));
          version.disabled = false;
          try {
            const vr = await api.get(`${dsUrl(d.id)}/versions`);
            const vs = itemsOf(vr).sort((a, b) => b.number - a.number);
            if (chosen === d) version.append(...vs.map((v) => h('option', { value: String(v.number) }, `v${v.number}${v.message ? ` · ${v.message.slice(0, 40)}` : ''}`)));
          } catch { /* latest only */ }
        },
      }, h('strong', null, d.name), h('span', { class: 'muted' }, ` ${d.owner}/${d.slug} · v${d.latest_version}`))))
        : h('li', { class: 'muted' }, 'No dataset with a published version matches.'));
    }
    let t = null;
    q.addEventListener('input', () => { clearTimeout(t); t = setTimeout(search, 250); });
    const dlg = h('dialog', { class: 'modal dsp-dialog', 'data-testid': 'dsp-attach-dialog', 'aria-label': 'Attach a dataset' });
    const close = () => { clearTimeout(t); if (dlg.open) dlg.close(); dlg.remove(); };
    ok.addEventListener('click', async () => {
      if (!chosen) return;
      ok.disabled = true;
      clear(err);
      try {
        const v = version.value === 'latest' ? 'latest' : Number(version.value);
        await save([...items, { dataset_id: chosen.id, version: v }], `Attached ${chosen.owner}/${chosen.slug}`);
        close();
      } catch (e) { clear(err, errorBox(e)); ok.disabled = false; }
    });
    dlg.append(h('h2', null, 'Attach a dataset'),
      h('p', { class: 'muted' }, 'Kernels and jobs of this project see it read-only under /home/aistudio/data/.'),
      q, found, h('label', { class: 'field' }, h('span', null, 'Version'), version), err,
      h('div', { class: 'modal-actions' }, ok, h('button', { type: 'button', onclick: close }, 'Cancel')));
    dlg.addEventListener('cancel', (ev) => { ev.preventDefault(); close(); });
    document.body.append(dlg);
    dlg.showModal();
    q.focus();
    search();
  }

  const el = h('div', { class: 'dsp', 'data-testid': 'side-datasets-body' },
    h('div', { class: 'fb-toolbar' }, h('button', { class: 'small', 'data-testid': 'dsp-attach', onclick: attach }, 'Attach…')),
    list, msg,
    h('p', { class: 'muted dsp-note' }, 'A running kernel sees changes after a restart.'));
  return { el, refresh, loaded: () => loaded };
}
