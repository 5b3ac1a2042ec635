// The versions page's diff view, loaded on demand (dynamic import from
// pages/projects.js) so the main bundle stays small. It asks the server for
// GET /api/v1/projects/{id}/diff (projects/diff.c: line hunks with unchanged
// lines folded; for a notebook, per cell source/output/metadata changes and
// images as sha256 only) and renders it: hunks with "n unchanged lines"
// between them, one card per cell (unchanged cells collapsed), images side
// by side, metadata changes folded in <details>. The two images compared are
// the only base64 that reaches the page: decoded from the two notebooks
// (fetched with ?version=) into <img src="data:..."> — never as text.
import { api, request, filePath } from './api.js';
import { h, clear, bytes } from './ui.js';

const enc = encodeURIComponent;
const label = (v) => (v === 'working' ? 'working tree' : String(v).slice(0, 10));

// One side's whole notebook, fetched once per diff and only when an image
// changed.
function notebookLoader(id, path, version) {
  let p = null;
  return () => {
    if (!p) {
      p = request('GET', filePath(id, path), { raw: true, query: version === 'working' ? undefined : { version } })
        .then((r) => r.text()).then((t) => JSON.parse(t)).catch(() => null);
    }
    return p;
  };
}

function imageOf(nb, cellIndex, outputIndex, mime) {
  const out = nb && nb.cells && nb.cells[cellIndex] && (nb.cells[cellIndex].outputs || [])[outputIndex];
  const v = out && out.data && out.data[mime];
  if (v === undefined) return null;
  const b64 = (Array.isArray(v) ? v.join('') : String(v)).replace(/\s+/g, '');
  return /^[A-Za-z0-9+/=]*$/.test(b64) ? `data:${mime};base64,${b64}` : null;
}

const FOLD = { color: '#57606a', background: '#f6f8fa', fontStyle: 'italic' };

// Hunks as a <pre>: a "⋯ n unchanged lines" row stands for each folded run.
export function hunksView(hunks, testid) {
  const rows = [];
  let oldNext = 1;
  for (const hk of hunks) {
    const skipped = hk.old_start - oldNext;
    if (skipped > 0) rows.push(h('div', { class: 'fold', style: FOLD }, `⋯ ${skipped} unchanged line${skipped === 1 ? '' : 's'}`));
    rows.push(h('div', { class: 'hunk-head', style: FOLD }, `@@ -${hk.old_start},${hk.old_lines} +${hk.new_start},${hk.new_lines} @@`));
    for (const l of hk.lines) {
      rows.push(h('div', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : null }, `${l.op} ${l.text}${l.truncated ? ' …(line cut)' : ''}`));
    }
    oldNext = hk.old_start + hk.old_lines;
  }
  return h('pre', { class: 'diff', 'data-testid': testid }, rows);
}

function metaView(changes, what) {
  if (!changes || !changes.length) return null;
  return h('details', { class: 'nbdiff-meta', 'data-testid': 'nbdiff-metadata' },
    h('summary', null, `${what} metadata: ${changes.length} change${changes.length === 1 ? '' : 's'}`),
    h('pre', { class: 'diff' }, changes.map((c) => [
      c.from !== null && c.from !== undefined ? h('div', { class: 'del' }, `- ${c.key}: ${JSON.stringify(c.from)}`) : null,
      c.to !== null && c.to !== undefined ? h('div', { class: 'add' }, `+ ${c.key}: ${JSON.stringify(c.to)}`) : null])));
}

function imagesView(cell, images, loadFrom, loadTo) {
  const changed = images.filter((im) => im.changed);
  if (!changed.length) return null;
  return changed.map((im) => {
    const left = h('figure', { 'data-testid': 'nbdiff-img-from', style: { margin: 0, flex: '1' } }, h('figcaption', { class: 'muted' }, im.from_sha256 ? `before · sha256 ${im.from_sha256.slice(0, 12)}` : 'before: none'));
    const right = h('figure', { 'data-testid': 'nbdiff-img-to', style: { margin: 0, flex: '1' } }, h('figcaption', { class: 'muted' }, im.to_sha256 ? `after · sha256 ${im.to_sha256.slice(0, 12)}` : 'after: none'));
    const put = (fig, nb, ci, oi) => {
      const src = ci === undefined || oi === undefined ? null : imageOf(nb, ci, oi, im.mime);
      if (src) fig.append(h('img', { src, alt: `${im.mime} output`, style: { maxWidth: '100%', minWidth: '48px', imageRendering: 'pixelated', border: '1px solid #d0d7de' } }));
    };
    if (im.from_sha256) loadFrom().then((nb) => put(left, nb, cell.from_index, im.from_output));
    if (im.to_sha256) loadTo().then((nb) => put(right, nb, cell.to_index, im.to_output));
    return h('div', { class: 'nbdiff-images', 'data-testid': 'nbdiff-images', style: { display: 'flex', gap: '1rem', alignItems: 'flex-start' } }, left, right);
  });
}

const STATUS_COLOR = { added: '#1a7f37', removed: '#cf222e', modified: '#9a6700', unchanged: '#57606a' };

function cellView(cell, n, loadFrom, loadTo) {
  const head = h('div', { class: 'nbdiff-cell-head' },
    h('strong', { 'data-testid': 'nbdiff-status', style: { color: STATUS_COLOR[cell.status] } }, cell.status),
    ` · ${cell.cell_type || 'cell'}`,
    cell.to_index !== undefined ? ` · cell ${cell.to_index + 1}` : cell.from_index !== undefined ? ` · was cell ${cell.from_index + 1}` : '',
    cell.id ? h('span', { class: 'muted' }, ` · id ${cell.id}`) : null,
    cell.execution_count ? h('span', { class: 'muted' }, ` · run [${cell.execution_count.from ?? ' '}] → [${cell.execution_count.to ?? ' '}]`) : null);
  const attrs = { class: `nbdiff-cell ${cell.status}`, 'data-status': cell.status, 'data-testid': 'nbdiff-cell', style: { borderLeft: `4px solid ${STATUS_COLOR[cell.status]}`, padding: '.25rem .5rem', margin: '.5rem 0' } };
  if (cell.status === 'unchanged') {
    const first = (cell.source_text || '').split('\n')[0];
    return h('div', attrs, head, h('div', { class: 'muted', style: FOLD }, `⋯ unchanged: ${first.length > 80 ? first.slice(0, 80) + '…' : first}`));
  }
  const out = cell.outputs || { text: [], images: [] };
  return h('div', attrs, head,
    cell.source && cell.source.length ? hunksView(cell.source, 'nbdiff-source') : h('div', { class: 'muted' }, 'source unchanged'),
    out.text && out.text.length ? [h('div', { class: 'muted' }, 'outputs'), hunksView(out.text, 'nbdiff-output')] : null,
    imagesView(cell, out.images || [], loadFrom, loadTo),
    metaView(cell.metadata, 'cell'));
}

// Render the diff of `path` from `from` to `to` (a version id or 'working')
// into `box`.
export async function showDiff(box, id, path, from, to) {
  const d = await api.get(`/api/v1/projects/${enc(id)}/diff`, { query: { path, from, to } });
  const title = h('h2', null, `${path}: ${label(from)} → ${label(to)} (${d.status})`);
  let body;
  if (d.kind === 'notebook') {
    const loadFrom = notebookLoader(id, path, from), loadTo = notebookLoader(id, path, to);
    const count = (s) => d.cells.filter((c) => c.status === s).length;
    body = [h('p', { 'data-testid': 'nbdiff-summary' }, `${count('modified')} modified, ${count('added')} added, ${count('removed')} removed, ${count('unchanged')} unchanged cells`),
      metaView(d.metadata, 'notebook'),
      d.cells.map((c, i) => cellView(c, i, loadFrom, loadTo))];
  } else if (d.kind === 'binary') {
    const side = (s) => (s ? `${bytes(s.size)}, sha256 ${s.sha256.slice(0, 12)}` : 'absent');
    body = h('p', { 'data-testid': 'nbdiff-binary' }, `binary file: ${side(d.from)} → ${side(d.to)}`);
  } else {
    body = d.hunks.length ? hunksView(d.hunks, 'nbdiff-text') : h('p', { class: 'muted' }, 'no changes');
  }
  clear(box, h('section', { class: 'card', 'data-testid': 'diff' }, title, body));
}
