// The read-only notebook page anyone can open while its project is public:
// /projects/{id}/share/{path}, and the notebook's own URL for anyone who may
// not change the project (a visitor who is not signed in, or a signed-in
// user who is not its owner: notebook.js sends them here, by the project's
// can_write). Cells and outputs are rendered as in the notebook, with
// the same sanitising (markdown.js, renderOutput), but there is no editor, no
// kernel and nothing to save. A banner names owner and project and offers
// "Fork to run": signed in, the project is forked and the same notebook opens
// in the fork; signed out, sign in (or sign up) first and the fork happens on
// return (main.js brings the visitor back here).
import { api, request, filePath, ApiError } from '../api.js';
import { h, busy, toast } from '../ui.js';
import { app, navigate } from '../app.js';
import { renderMarkdown } from '../markdown.js';
import { nbText } from '../output.js';
import { renderOutput } from './notebook.js';
import { shareDialog } from '../notebook_io.js';

const enc = encodeURIComponent;
const encPath = (p) => p.split('/').map(enc).join('/');

// sessionStorage keys: where to go after signing in (main.js reads it), and
// the fork the visitor asked for ("<project id>/<path>"; set only by pressing
// the button in this tab, so a link alone can never make anyone fork).
export const AFTER_LOGIN = 'eddy.after_login';
const PENDING_FORK = 'eddy.pending_fork';

// `loaded`: the project and the file's text when the caller has them already.
export async function sharePage(projectId, path, loaded = null) {
  let project, text;
  try {
    [project, text] = loaded ? [loaded.project, loaded.text] : await Promise.all([
      api.get(`/api/v1/projects/${enc(projectId)}`),
      request('GET', filePath(projectId, path), { raw: true }).then((r) => r.text()),
    ]);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return notFound(path);
    throw e;
  }
  let nb;
  try { nb = JSON.parse(text); } catch { throw new Error(`${path} is not a valid notebook`); }

  // the caller may change the project (its owner): offer the editor and Share
  const mine = !!app.me && project.can_write === true;
  const fork = async () => {
    if (!app.me) {
      // back to this page (also when it was reached at the notebook's URL,
      // which opens the editor once signed in) to fork there
      sessionStorage.setItem(AFTER_LOGIN, `/projects/${enc(projectId)}/share/${encPath(path)}`);
      sessionStorage.setItem(PENDING_FORK, `${projectId}/${path}`);
      toast('Sign in to fork this notebook: you come back here afterwards');
      navigate('/login');
      return;
    }
    const f = await api.post(`/api/v1/projects/${enc(projectId)}/fork`);
    // A fork holds the source's last saved version, which may lack the notebook.
    try { await request('GET', filePath(f.id, path), { raw: true }); }
    catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404) throw e;
      toast(`Forked into ${f.name}, but ${path} is not in the project's last saved version`, 'error');
      navigate(`/projects/${enc(f.id)}`);
      return;
    }
    toast(`Forked into ${f.name}`);
    navigate(`/projects/${enc(f.id)}/notebook/${encPath(path)}`);
  };
  const forkBtn = h('button', { class: 'primary', 'data-testid': 'fork-to-run', onclick: () => busy(forkBtn, fork) },
    mine ? 'Fork' : 'Fork to run');
  const ownerLink = app.me ? h('a', { href: `/projects/${enc(projectId)}` }, `${project.owner}/${project.name}`) : `${project.owner}/${project.name}`;
  const banner = h('div', { class: 'share-banner', 'data-testid': 'share-banner', role: 'note' },
    h('strong', null, 'Read-only'), ' · ', ownerLink,
    project.visibility !== 'public' ? h('span', { class: 'muted' }, ' (private: only you can see this page)') : null,
    app.me && !mine ? h('span', { class: 'muted', 'data-testid': 'share-not-yours' }, ' · not your project: fork it to run and edit') : null,
    h('span', { class: 'spacer' }),
    mine ? h('a', { href: `/projects/${enc(projectId)}/notebook/${encPath(path)}`, 'data-testid': 'open-editor' }, 'Open in the editor') : null,
    mine ? h('button', { onclick: () => shareDialog(project, path), 'data-testid': 'share' }, 'Share') : null,
    forkBtn);

  const cells = h('div', { class: 'cells', role: 'list', 'aria-label': 'Cells', 'data-testid': 'share-cells' },
    (nb.cells || []).map((c) => cellView(c)));
  const page = h('div', { class: 'page notebook share' },
    h('div', { class: 'page-head' }, h('h1', null, project.name, ' / ', path),
      project.description ? h('p', { class: 'muted' }, project.description) : null),
    banner, cells);

  // Back from signing in after pressing "Fork to run": do what was asked.
  if (app.me && sessionStorage.getItem(PENDING_FORK) === `${projectId}/${path}`) {
    sessionStorage.removeItem(PENDING_FORK);
    queueMicrotask(() => busy(forkBtn, fork));
  }
  return page;
}

function cellView(c) {
  const type = c.cell_type === 'markdown' ? 'markdown' : c.cell_type === 'code' ? 'code' : 'raw';
  const src = nbText(c.source);
  const body = h('div', { class: 'cell-body' });
  let prompt = '';
  if (type === 'markdown') {
    const md = h('div', { class: 'markdown', 'data-testid': 'markdown' });
    renderMarkdown(md, src, { attachments: c.attachments });
    body.append(md);
  } else if (type === 'code') {
    prompt = `[${c.execution_count ?? ' '}]`;
    body.append(h('pre', { class: 'source', 'data-testid': 'cell-source' }, src),
      h('div', { class: 'outputs', 'data-testid': 'outputs' }, (c.outputs || []).map((o) => renderOutput(o))));
  } else {
    body.append(h('pre', { class: 'raw' }, src));
  }
  return h('div', { class: `cell ${type} readonly`, role: 'listitem', 'data-type': type, 'data-cell-id': c.id || null },
    h('div', { class: 'prompt' }, prompt), body);
}

function notFound(path) {
  return h('div', { class: 'page', 'data-testid': 'share-not-found' },
    h('h1', null, 'Not found'),
    h('p', null, `There is no notebook ${path} here, or its project is private.`),
    app.me ? null : h('p', null, 'If it is yours, ',
      h('a', { href: '/login', onclick: () => sessionStorage.setItem(AFTER_LOGIN, location.pathname) }, 'sign in'), ' to open it.'));
}
