// One version of a dataset on its page: the file tree with sizes, a preview
// of the selected file (a table with column types and the row count, an
// image's thumbnail, the head of a text or JSON file; "computing…" while the
// server answers 202), downloads (a file, the whole version as .tar: plain
// links, so the browser streams them to disk with the session cookie), stats
// by media type, and how to use it from a kernel or job.
import { api, dsUrl, dsFileUrl, dsArchiveUrl, dsPreviewUrl, dsMountPath, noRoute } from './api.js';
import { h, clear, size, toast } from './ui.js';
import { onLeave } from './app.js';

const PREVIEW_TRIES = 120;   // ~2 min of 202s (Retry-After 1 s) before giving up
const OPEN_ALL = 200;        // versions with at most this many files start with every folder open
const MAX_CHILDREN = 1000;   // rows drawn per folder

// The flat manifest as a tree: {name, path, dir, children: Map, file}.
function buildTree(files) {
  const root = { name: '', path: '', dir: true, children: new Map(), size: 0, count: 0 };
  for (const f of files) {
    let node = root;
    const parts = f.path.split('/');
    parts.forEach((name, i) => {
      node.size += f.size; node.count++;
      const path = parts.slice(0, i + 1).join('/');
      if (i === parts.length - 1) { node.children.set(name, { name, path, dir: false, file: f }); return; }
      if (!node.children.has(name)) node.children.set(name, { name, path, dir: true, children: new Map(), size: 0, count: 0 });
      node = node.children.get(name);
    });
  }
  return root;
}
const sorted = (node) => [...node.children.values()].sort((a, b) => (a.dir !== b.dir ? (a.dir ? -1 : 1) : a.name.localeCompare(b.name, undefined, { numeric: true })));

// Copy `text`, with a toast either way.
export async function copyText(text) {
  try { await navigator.clipboard.writeText(text); toast(`Copied ${text}`); }
  catch { toast(`Copy this: ${text}`); }
}

// The "how to use" card: where kernels and jobs see it, and a snippet.
export function howToUse(d, n) {
  const mount = dsMountPath(d);
  const first = n && n.firstFile;
  const snippet = first && /\.(csv|tsv)$/i.test(first)
    ? `import pandas as pd\n\ndf = pd.read_csv('${mount}${first}'${/\.tsv$/i.test(first) ? ", sep='\\t'" : ''})\ndf.head()`
    : `import os\n\nroot = '${mount}'\nfor dirpath, dirs, files in os.walk(root):\n    for f in files:\n        print(os.path.join(dirpath, f))`;
  const envSnippet = `import json, os\n\n# every dataset attached to the project: name, version, path\nfor ds in json.loads(os.environ.get('EDDY_DATASETS', '[]')):\n    print(ds['name'], ds['version'], ds['path'])`;
  return h('section', { class: 'card ds-howto', 'data-testid': 'ds-howto' },
    h('h2', null, 'How to use'),
    h('p', null, 'Attach the dataset to a project (the notebook\'s side panel, section "Datasets", or ',
      h('code', null, `eddy datasets attach PROJECT ${d.owner}/${d.slug}`), '). Its kernels and jobs then see the files read-only at'),
    h('p', { class: 'ds-mount' }, h('code', { 'data-testid': 'ds-mount-path' }, mount), ' ',
      h('button', { class: 'small', onclick: () => copyText(mount) }, 'Copy path')),
    h('p', null, 'The version is the one the project pins, or the latest when the kernel or job started. ',
      h('code', null, 'EDDY_DATASETS'), ' (JSON) lists what is mounted, ', h('code', null, 'EDDY_DATA_DIR'), ' is ', h('code', null, '/home/aistudio/data'), '.'),
    h('pre', { class: 'ds-snippet' }, snippet),
    h('pre', { class: 'ds-snippet' }, envSnippet));
}

// A preview's body from the server's JSON.
function previewBody(p, f) {
  if (p.kind === 'table') {
    const cols = p.columns || [];
    const rows = p.rows || [];
    const cell = (row, i) => (Array.isArray(row) ? row[i] : row[cols[i] && cols[i].name]);
    return h('div', { class: 'ds-preview-table' },
      h('table', { class: 'table', 'data-testid': 'ds-preview-table' },
        h('thead', null, h('tr', null, cols.map((c) => h('th', null, c.name, h('span', { class: 'ds-coltype', 'data-testid': 'ds-coltype' }, c.type))))),
        h('tbody', null, rows.map((r) => h('tr', null, cols.map((_, i) => { const v = cell(r, i); return h('td', null, v === null || v === undefined ? '' : String(v)); }))))),
      h('p', { class: 'muted', 'data-testid': 'ds-row-count' },
        p.row_count !== undefined && p.row_count !== null ? `${Number(p.row_count).toLocaleString()} rows` : '', rows.length ? ` · first ${rows.length} shown` : '',
        ` · ${cols.length} column${cols.length === 1 ? '' : 's'}`));
  }
  if (p.kind === 'image') {
    return h('div', { class: 'ds-preview-image' },
      p.thumbnail ? h('img', { src: p.thumbnail, alt: `Thumbnail of ${f.path}`, 'data-testid': 'ds-thumbnail' }) : null,
      h('p', { class: 'muted' }, p.width && p.height ? `${p.width} × ${p.height} px` : '', ` · ${size(f.size)}`));
  }
  if (p.kind === 'text' || p.kind === 'json') {
    const text = p.kind === 'json' && typeof p.text !== 'string' ? JSON.stringify(p.json ?? p.value ?? p, null, 2) : (p.text || '');
    return h('div', null, h('pre', { class: 'ds-preview-text', 'data-testid': 'ds-preview-text' }, text),
      p.truncated ? h('p', { class: 'muted' }, `The first ${size(new Blob([text]).size)} of ${size(f.size)}.`) : null);
  }
  return h('p', { class: 'muted', 'data-testid': 'ds-preview-none' }, `No preview for ${f.media_type || 'this file'} (${size(f.size)})`, p.error ? `: ${p.error}` : '.');
}

export async function versionView(d, n) {
  const v = await api.get(`${dsUrl(d.id)}/versions/${n}`);
  const files = v.files || [];
  const tree = buildTree(files);
  const preview = h('div', { class: 'ds-preview', 'data-testid': 'ds-preview', 'aria-live': 'polite' });
  const treeEl = h('ul', { class: 'ds-tree', 'data-testid': 'ds-files', role: 'tree', 'aria-label': `Files of version ${n}` });
  let current = null, previewSeq = 0, stopped = false;
  onLeave(() => { stopped = true; });

  async function show(f) {
    current = f.path;
    for (const el of treeEl.querySelectorAll('.ds-file.sel')) el.classList.remove('sel');
    const row = treeEl.querySelector(`.ds-file[data-path="${CSS.escape(f.path)}"]`);
    if (row) row.classList.add('sel');
    const url = new URL(location.href);
    url.searchParams.set('v', n); url.searchParams.set('f', f.path);
    history.replaceState(null, '', url.pathname + url.search);
    const my = ++previewSeq;
    const head = h('div', { class: 'ds-preview-head' }, h('strong', null, f.path), h('span', { class: 'muted' }, ` ${f.media_type || ''} · ${size(f.size)}`),
      h('span', { class: 'spacer' }), h('a', { class: 'button small', href: dsFileUrl(d.id, n, f.path), download: f.path.split('/').pop(), 'data-testid': 'ds-download-file' }, 'Download'));
    clear(preview, head, h('p', { class: 'muted', 'data-testid': 'ds-preview-pending' }, 'Loading the preview…'));
    for (let i = 0; i < PREVIEW_TRIES && !stopped && my === previewSeq; i++) {
      let p;
      try { p = await api.get(dsPreviewUrl(d.id, n, f.path)); }
      catch (e) {
        if (my !== previewSeq) return;
        clear(preview, head, noRoute(e) ? h('p', { class: 'muted' }, 'Previews are not available on this server.') : h('p', { class: 'neg' }, `No preview: ${e.message}`));
        return;
      }
      if (my !== previewSeq) return;
      if (!p || !p.pending) { clear(preview, head, previewBody(p || {}, f)); return; }
      clear(preview, head, h('p', { class: 'muted', 'data-testid': 'ds-preview-pending' }, 'Computing the preview…'));
      await new Promise((r) => setTimeout(r, 1000));
    }
    if (my === previewSeq && !stopped) clear(preview, head, h('p', { class: 'muted' }, 'The preview is still being computed: select the file again later.'));
  }

  // A folder's rows are made when it is first opened: a version may have
  // 100,000 files. Small versions start with every folder open.
  const openAll = files.length <= OPEN_ALL;
  const children = (node, depth) => {
    const all = sorted(node);
    const rows = all.slice(0, MAX_CHILDREN).map((c) => item(c, depth + 1));
    if (all.length > MAX_CHILDREN) rows.push(h('li', { class: 'muted ds-more', style: { paddingLeft: `${depth * 1.1 + 1.5}rem` } }, `… and ${all.length - MAX_CHILDREN} more here (download the version to see them all)`));
    return rows;
  };
  function item(node, depth) {
    if (node.dir) {
      const kids = h('ul', { role: 'group', hidden: !openAll });
      let made = false;
      const setOpen = (open) => {
        if (open && !made) { kids.append(...children(node, depth)); made = true; }
        li.setAttribute('aria-expanded', String(open));
        kids.hidden = !open;
      };
      const li = h('li', { class: 'ds-dir', role: 'treeitem', 'data-path': node.path },
        h('button', {
          class: 'ds-row', style: { paddingLeft: `${depth * 1.1 + 0.3}rem` },
          onclick: () => setOpen(li.getAttribute('aria-expanded') !== 'true'),
        }, h('span', { class: 'ds-caret', 'aria-hidden': 'true' }), h('span', { class: 'ds-name' }, `${node.name}/`), h('span', { class: 'ds-fsize' }, `${node.count} file${node.count === 1 ? '' : 's'} · ${size(node.size)}`)),
        kids);
      setOpen(openAll);
      return li;
    }
    const f = node.file;
    return h('li', { class: 'ds-file', role: 'treeitem', 'data-path': f.path, 'data-testid': 'ds-file' },
      h('button', { class: 'ds-row', style: { paddingLeft: `${depth * 1.1 + 1.2}rem` }, onclick: () => show(f) },
        h('span', { class: 'ds-name' }, node.name), h('span', { class: 'ds-fsize' }, size(f.size))));
  }
  treeEl.append(...children(tree, -1));

  const stats = h('p', { class: 'muted ds-stats', 'data-testid': 'ds-stats' }, `${files.length} file${files.length === 1 ? '' : 's'} · ${size(v.size_bytes)}`);
  api.get(`${dsUrl(d.id)}/versions/${n}/stats`).then((s) => {
    const by = (s.by_type || []).slice(0, 6).map((t) => `${t.media_type} ${t.files}`);
    if (by.length) stats.append(` · ${by.join(', ')}`);
  }).catch(() => {});
  const archive = h('a', { class: 'button', href: dsArchiveUrl(d.id, n), download: `${d.owner}-${d.slug}-v${n}.tar`, 'data-testid': 'ds-download-archive' }, `Download v${n} (.tar)`);
  const want = new URLSearchParams(location.search).get('f');
  const start = files.find((f) => f.path === want) || files[0];
  // the file asked for (?f=) is shown with its folders open
  if (start) {
    const parts = start.path.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      const dir = [...treeEl.querySelectorAll('.ds-dir')].find((e) => e.dataset.path === p && e.getAttribute('aria-expanded') !== 'true');
      if (dir) dir.firstChild.click();
    }
    show(start);
  }
  return [
    h('section', { class: 'card ds-version', 'data-testid': 'ds-version', 'data-number': n },
      h('div', { class: 'ds-version-head' }, h('h2', null, `Version ${n}`), v.message ? h('span', { class: 'muted' }, v.message) : null, h('span', { class: 'spacer' }), archive),
      stats,
      files.length ? h('div', { class: 'ds-browser' }, h('div', { class: 'ds-tree-wrap' }, treeEl), preview) : h('p', { class: 'muted' }, 'This version has no files.')),
    howToUse(d, { firstFile: (files.find((f) => /\.(csv|tsv)$/i.test(f.path)) || start || {}).path }),
  ];
}
