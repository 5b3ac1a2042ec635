// "Save as dataset": a finished job's output files (the job page) or a
// project's files (the project page) become a new version of one of the
// user's datasets (or of a new one made here first), through POST
// /api/v1/datasets/{id}/versions/from {job_id | project_id, message}; the
// bytes go from the job's output or the project's tree to the dataset on the
// server, never through the browser.
import { api, listAll, dsUrl, ApiError } from './api.js';
import { h, clear, toast, errorBox, size } from './ui.js';
import { app } from './app.js';

const enc = encodeURIComponent;
const NEW = '__new__';

export function saveOutputAsDataset(jobId) {
  return saveAsDataset({ job_id: isNaN(Number(jobId)) ? jobId : Number(jobId) },
    { name: `job-${jobId}-output`, what: `Output of job #${jobId}`, button: 'Save output as dataset' });
}

// A project's files (its working tree without .git).
export function saveProjectAsDataset(project) {
  return saveAsDataset({ project_id: project.id },
    { name: `${project.name}-files`, what: `Files of project ${project.name}`, button: 'Save files as dataset' });
}

async function saveAsDataset(source, { name: defaultName, what, button }) {
  let mine = [];
  try { mine = (await listAll('/api/v1/datasets', { owner: app.me.username }, 500)).filter((d) => d.can_write !== false); }
  catch (e) { if (e instanceof ApiError && e.status === 404) return null; /* no datasets on this server */ }
  const pick = h('select', { 'aria-label': 'Dataset', 'data-testid': 'save-ds-pick' },
    h('option', { value: NEW }, 'New dataset…'), mine.map((d) => h('option', { value: d.id }, `${d.name} (${d.owner}/${d.slug})`)));
  const name = h('input', { placeholder: 'name of the new dataset', 'aria-label': 'New dataset name', 'data-testid': 'save-ds-name', value: defaultName, style: { width: '14em' } });
  const message = h('input', { placeholder: 'version message', 'aria-label': 'Version message', 'data-testid': 'save-ds-message', value: what, style: { width: '16em' } });
  pick.addEventListener('change', () => { name.hidden = pick.value !== NEW; });
  const result = h('div', { 'data-testid': 'save-ds-result', 'aria-live': 'polite' });
  const btn = h('button', {
    class: 'primary', 'data-testid': 'save-ds',
    onclick: async () => {
      clear(result);
      btn.disabled = true;
      try {
        let d = mine.find((x) => x.id === pick.value);
        if (!d) {
          if (!name.value.trim()) throw new Error('Name the new dataset');
          d = await api.post('/api/v1/datasets', { name: name.value.trim(), visibility: 'private', description: `${what}.` });
          mine.push(d);
          pick.append(h('option', { value: d.id }, `${d.name} (${d.owner}/${d.slug})`));
          pick.value = d.id;
          name.hidden = true;
        }
        const v = await api.post(`${dsUrl(d.id)}/versions/from`, { ...source, message: message.value.trim() });
        const files = v.files ? v.files.length : v.file_count;
        clear(result, h('p', { class: 'ok' }, `Saved as `, h('a', { href: `/datasets/${enc(d.owner)}/${enc(d.slug)}?v=${v.number}`, 'data-testid': 'save-ds-link' }, `${d.owner}/${d.slug} v${v.number}`),
          files !== undefined ? ` (${files} file${files === 1 ? '' : 's'}, ${size(v.size_bytes)})` : '', '.'));
        toast(`Saved as ${d.slug} v${v.number}`);
      } catch (e) {
        let msg = e.message || String(e);
        if (e instanceof ApiError && e.status === 402) msg = `no room for it in your dataset storage (${msg})`;
        else if (e instanceof ApiError && e.status === 422) msg = `nothing new to publish (${msg})`;
        clear(result, errorBox(`Not saved: ${msg}`));
      } finally { btn.disabled = false; }
    },
  }, button);
  return h('div', { class: 'copy-artifacts save-dataset', 'data-testid': 'save-dataset' },
    h('h3', null, 'Save as a dataset'),
    h('div', { class: 'inline-form' }, pick, name, message, btn),
    result);
}
