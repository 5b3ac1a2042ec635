// The owner's part of a dataset's page: the draft (the files the next version
// is published from; after a publish it still holds that version's files, so
// a new version only needs what changed), uploads into it with progress bars
// that resume after a dropped connection or a reload (datasets_upload.js),
// removing files, and publishing a version with a message (optionally
// unpacking the draft's .zip/.tar/.tgz archives first).
import { api, dsUrl, dsDraftFileUrl, ApiError } from './api.js';
import { h, clear, size, toast, busy, errorBox } from './ui.js';
import { onLeave } from './app.js';
import { uploadDatasetFile, cancelUpload, hasSavedUpload, savedUploads, discardSaved } from './datasets_upload.js';

const ARCHIVE = /\.(zip|tar|tgz|tar\.gz|tar\.bz2|tar\.xz)$/i;
const MAX_ROWS = 2000;   // draft rows drawn at most
const rate = (bps) => (bps > 0 ? `${size(Math.round(bps))}/s` : '');

export async function draftView(d, { latest, onPublished }) {
  const list = h('div', { 'data-testid': 'ds-draft' });
  const uploads = h('ul', { class: 'ds-uploads', 'data-testid': 'ds-uploads' });
  const queue = [];
  let running = false, draft = [];
  const controllers = new Set();
  onLeave(() => { for (const c of controllers) c.abort(); });

  async function refresh() {
    const r = await api.get(`${dsUrl(d.id)}/draft`);
    draft = Array.isArray(r) ? r : r.files || r.items || [];
    draft.sort((a, b) => a.path.localeCompare(b.path));
    const base = new Map(((latest && latest.files) || []).map((f) => [f.path, f.sha256]));
    const state = (f) => (!latest ? '' : !base.has(f.path) ? 'new' : base.get(f.path) !== f.sha256 ? 'changed' : '');
    const changes = latest ? draft.filter(state).length + [...base.keys()].filter((p) => !draft.some((f) => f.path === p)).length : 0;
    const total = draft.reduce((a, f) => a + f.size, 0);
    clear(list, draft.length
      ? [h('p', { class: 'muted', 'data-testid': 'ds-draft-summary' }, `${draft.length} file${draft.length === 1 ? '' : 's'} · ${size(total)}`,
        latest ? (changes ? ` · ${changes} change${changes === 1 ? '' : 's'} since v${latest.number}` : ` · the same as v${latest.number}`) : ''),
      h('div', { class: 'ds-draft-list' }, h('table', { class: 'table' },
        h('thead', null, h('tr', null, h('th', null, 'File'), h('th', null, 'Size'), h('th', null, ''), h('th', null, ''))),
        h('tbody', null, draft.slice(0, MAX_ROWS).map((f) => {
          const rm = h('button', {
            class: 'small', 'data-testid': 'ds-draft-remove',
            onclick: () => busy(rm, async () => { await api.del(dsDraftFileUrl(d.id, f.path)); await refresh(); }),
          }, 'Remove');
          const st = state(f);
          return h('tr', { 'data-path': f.path, 'data-testid': 'ds-draft-file' }, h('td', null, h('code', null, f.path)), h('td', { class: 'num' }, size(f.size)),
            h('td', null, st ? h('span', { class: 'badge' }, st) : null), h('td', null, rm));
        })))),
      draft.length > MAX_ROWS ? h('p', { class: 'muted' }, `The first ${MAX_ROWS} are listed.`) : null]
      : h('p', { class: 'muted' }, 'The draft is empty: add files below.'));
    const archives = draft.filter((f) => ARCHIVE.test(f.path)).map((f) => f.path);
    unpackLabel.style.display = archives.length ? '' : 'none';   // .check's display would beat [hidden]
    unpackNames.textContent = archives.join(', ');
  }

  // One upload's row: a progress bar with bytes and rate, Cancel.
  function uploadRow(file, path) {
    const bar = h('progress', { max: String(file.size || 1), value: '0', 'aria-label': `Upload of ${path}` });
    const text = h('span', { class: 'ds-up-text', 'data-testid': 'ds-upload-text' }, hasSavedUpload(d.id, path, file) ? 'waiting (will resume)' : 'waiting');
    const ctl = new AbortController();
    const cancel = h('button', { class: 'small', 'data-testid': 'ds-upload-cancel', onclick: async () => { ctl.abort(); await cancelUpload(d.id, path, file); li.dataset.state = 'cancelled'; text.textContent = 'cancelled'; cancel.remove(); } }, 'Cancel');
    const li = h('li', { 'data-path': path, 'data-testid': 'ds-upload', 'data-state': 'waiting' }, h('code', null, path), bar, text, cancel);
    uploads.append(li);
    return { file, path, ctl, li, bar, text, cancel };
  }

  async function pump() {
    if (running) return;
    running = true;
    while (queue.length) {
      const u = queue.shift();
      if (u.ctl.signal.aborted) continue;
      controllers.add(u.ctl);
      u.li.dataset.state = 'uploading';
      let resumed = 0;
      try {
        await uploadDatasetFile(d.id, u.path, u.file, {
          signal: u.ctl.signal,
          on: (ev) => {
            if (ev.phase === 'hash') { u.bar.value = ev.loaded; u.text.textContent = `checksum ${size(ev.loaded)} of ${size(ev.total)}`; return; }
            if (ev.phase === 'retry') { u.li.dataset.state = 'retrying'; u.text.textContent = `${ev.error}: retrying in ${Math.round(ev.wait / 1000)} s (attempt ${ev.attempt})`; return; }
            u.li.dataset.state = ev.phase === 'done' ? 'done' : 'uploading';
            if (ev.resumedFrom) resumed = ev.resumedFrom;
            u.bar.value = ev.loaded;
            u.li.dataset.loaded = String(ev.loaded);
            u.text.textContent = `${size(ev.loaded)} of ${size(ev.total)}${ev.phase === 'upload' ? ` · ${rate(ev.rate)}` : ''}${ev.resumedFrom ? ` · resumed at ${size(ev.resumedFrom)}` : ''}`;
          },
        });
        u.li.dataset.state = 'done';
        u.bar.value = u.file.size || 1;
        u.text.textContent = `${size(u.file.size)} · done${resumed ? ` (resumed at ${size(resumed)})` : ''}`;
        u.cancel.remove();
        await refresh();
      } catch (e) {
        if (e.name === 'AbortError') continue;
        u.li.dataset.state = 'failed';
        let msg = e.message || String(e);
        if (e instanceof ApiError && e.status === 402) msg = `no room: ${msg}`;
        u.text.textContent = `failed: ${msg} (choose the file again to resume)`;
        u.text.classList.add('neg');
      } finally { controllers.delete(u.ctl); }
    }
    running = false;
  }

  const folder = h('input', { placeholder: 'folder in the dataset (optional)', 'aria-label': 'Folder in the dataset', 'data-testid': 'ds-upload-dir', style: { width: '16em' } });
  const addFiles = (files) => {
    const dir = folder.value.trim().replace(/^\/+|\/+$/g, '');
    for (const f of files) {
      // A folder chosen with webkitdirectory keeps its relative paths.
      const rel = f.webkitRelativePath || f.name;
      // The same file as an interrupted upload goes on where that one was,
      // whatever folder is typed now.
      const again = !dir && interrupted.find((p) => p.size === f.size && p.mtime === f.lastModified && p.path.split('/').pop() === f.name && pending.querySelector(`li[data-path="${CSS.escape(p.path)}"]`));
      const path = again ? again.path : dir ? `${dir}/${rel}` : rel;
      dropPending(path);
      queue.push(uploadRow(f, path));
    }
    pump();
  };
  const picker = h('input', { type: 'file', multiple: true, 'data-testid': 'ds-upload-input', 'aria-label': 'Files to upload', onchange: () => { addFiles([...picker.files]); picker.value = ''; } });
  const zone = h('div', { class: 'ds-drop', 'data-testid': 'ds-drop' }, 'Drop files here, or ', picker);
  zone.addEventListener('dragover', (ev) => { ev.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (ev) => { ev.preventDefault(); zone.classList.remove('over'); addFiles([...ev.dataTransfer.files]); });

  const message = h('input', { placeholder: 'What changed in this version', 'aria-label': 'Version message', 'data-testid': 'ds-publish-message', style: { flex: '1', minWidth: '16em' }, maxlength: 4000 });
  const unpack = h('input', { type: 'checkbox', 'data-testid': 'ds-unpack' });
  const unpackNames = h('span', { class: 'muted' });
  const unpackLabel = h('label', { class: 'check', style: { display: 'none' } }, unpack, 'Unpack archives ', unpackNames);
  const publishErr = h('div', { 'data-testid': 'ds-publish-error' });
  const publish = h('button', {
    class: 'primary', 'data-testid': 'ds-publish',
    onclick: () => busy(publish, async () => {
      clear(publishErr);
      if (running || queue.length) { clear(publishErr, errorBox('Wait for the uploads to finish first.')); return; }
      const body = { message: message.value.trim() };
      if (unpack.checked) body.unpack = draft.filter((f) => ARCHIVE.test(f.path)).map((f) => f.path);
      try {
        const v = await api.post(`${dsUrl(d.id)}/versions`, body);
        toast(`Published version ${v.number}`);
        await onPublished(v);
      } catch (e) { clear(publishErr, errorBox(e.status === 422 ? `Not published: ${e.message}` : e)); }
    }),
  }, 'Publish version');

  // Uploads a reload or a failure interrupted: choosing the same file again
  // (same size and modification time) resumes at the server's offset.
  const pending = h('ul', { class: 'ds-uploads ds-pending', 'data-testid': 'ds-pending' });
  const interrupted = await savedUploads(d.id).catch(() => []);
  for (const p of interrupted) {
    const discard = h('button', { class: 'small', 'data-testid': 'ds-pending-discard', onclick: async () => { await discardSaved(p.key, p.upload_id); li.remove(); } }, 'Discard');
    const li = h('li', { 'data-path': p.path, 'data-testid': 'ds-pending-upload' }, h('code', null, p.path),
      h('progress', { max: String(p.size || 1), value: String(p.offset), 'aria-label': `Interrupted upload of ${p.path}` }),
      h('span', { class: 'ds-up-text' }, `${size(p.offset)} of ${size(p.size)} sent: choose the same file again to resume`), discard);
    pending.append(li);
  }
  const dropPending = (path) => { for (const li of pending.querySelectorAll('li')) if (li.dataset.path === path) li.remove(); };
  if (latest && !latest.files) {
    try { latest = await api.get(`${dsUrl(d.id)}/versions/${latest.number}`); } catch { /* no "changed" marks */ }
  }
  await refresh();
  return h('section', { class: 'card ds-draft-card', 'data-testid': 'ds-draft-card' },
    h('h2', null, 'Draft'),
    h('p', { class: 'muted' }, latest ? `The next version starts from v${latest.number}'s files: upload what is new or changed, remove what should go, then publish.` : 'Upload files, then publish the first version.'),
    list,
    h('div', { class: 'inline-form' }, zone, folder),
    pending, uploads,
    h('div', { class: 'inline-form ds-publish' }, message, unpackLabel, publish),
    publishErr);
}
