// Eddy's browser app: a router over history URLs and the layout (the signed-in
// user, navigate() and onLeave() are in app.js, shared by the pages). Every
// page needs a session except the read-only notebook (pages/share.js), which
// a visitor who is not signed in also reaches through the notebook's own URL.
import './style.css';
import { api, setCsrf, ApiError } from './api.js';
import { app, navigate, loadMe, setRender } from './app.js';
import { h, clear, errorBox } from './ui.js';
import { loginPage, signupPage } from './pages/auth.js';
import { projectsPage, projectPage, fileEditorPage } from './pages/projects.js';
import { accountPage } from './pages/account.js';
import { adminPage } from './pages/admin.js';
import { jobsPage, jobPage } from './pages/jobs.js';

async function logout() {
  try { await api.post('/api/v1/auth/logout'); } catch { /* already gone */ }
  app.me = null;
  setCsrf(null);
  navigate('/login');
}

function layout(content) {
  const me = app.me;
  const link = (href, label) => h('a', {
    href, class: location.pathname === href || location.pathname.startsWith(href + '/') ? 'active' : null,
  }, label);
  return h('div', { class: 'shell' },
    h('header', { class: 'topbar' },
      h('a', { href: '/projects', class: 'brand' }, 'Eddy'),
      h('nav', { 'aria-label': 'Main' },
        link('/projects', 'Projects'), link('/datasets', 'Datasets'), link('/jobs', 'Jobs'), link('/competitions', 'Competitions'), link('/deployments', 'Deployments'), link('/account', 'Account'),
        me.role === 'admin' ? link('/admin', 'Admin') : null),
      h('span', { class: 'spacer' }),
      h('span', { class: 'whoami', 'data-testid': 'whoami' }, `${me.username} · ${me.tier}`),
      h('button', { class: 'link', onclick: logout }, 'Sign out')),
    h('main', { id: 'main', tabindex: '-1' }, content));
}

// The bar a visitor who is not signed in sees (the read-only notebook).
function anonLayout(content) {
  const back = () => sessionStorage.setItem(AFTER_LOGIN, location.pathname);
  return h('div', { class: 'shell' },
    h('header', { class: 'topbar' },
      h('a', { href: '/login', class: 'brand', onclick: back }, 'Eddy'),
      h('span', { class: 'spacer' }),
      h('nav', { class: 'anon-links', 'aria-label': 'Account' },
        h('a', { href: '/login', onclick: back, 'data-testid': 'anon-sign-in' }, 'Sign in'),
        h('a', { href: '/signup', onclick: back }, 'Create an account'))),
    h('main', { id: 'main', tabindex: '-1' }, content));
}

// Where the app sends a visitor back to after signing in (share.js sets it).
const AFTER_LOGIN = 'eddy.after_login';
const segments = (s) => s.split('/').map(decodeURIComponent).join('/');
const sharePage = async (id, path) => (await import('./pages/share.js')).sharePage(decodeURIComponent(id), segments(path));
const SHARE_RE = /^\/projects\/([^/]+)\/share\/(.+)$/;
const NOTEBOOK_RE = /^\/projects\/([^/]+)\/notebook\/(.+)$/;

const routes = [
  [SHARE_RE, (m) => sharePage(m[1], m[2])],
  [/^\/projects\/?$/, () => projectsPage()],
  [/^\/projects\/([^/]+)\/notebook\/(.+)$/, async (m) => (await import('./pages/notebook.js')).notebookPage(decodeURIComponent(m[1]), decodeURI(m[2]))],
  [/^\/projects\/([^/]+)\/edit\/(.+)$/, (m) => fileEditorPage(decodeURIComponent(m[1]), decodeURI(m[2]))],
  [/^\/projects\/([^/]+)\/?$/, (m) => projectPage(decodeURIComponent(m[1]))],
  [/^\/datasets\/?$/, async () => (await import('./pages/datasets.js')).datasetsPage()],
  [/^\/datasets\/([^/]+)\/([^/]+)\/?$/, async (m) => (await import('./pages/datasets.js')).datasetPage(decodeURIComponent(m[1]), decodeURIComponent(m[2]))],
  [/^\/datasets\/([^/]+)\/?$/, async (m) => (await import('./pages/datasets.js')).datasetPage(decodeURIComponent(m[1]))],
  [/^\/deployments\/?$/, async () => (await import('./pages/deployments.js')).deploymentsPage()],
  [/^\/deployments\/([^/]+)\/?$/, async (m) => (await import('./pages/deployments.js')).deploymentPage(decodeURIComponent(m[1]))],
  [/^\/competitions\/?$/, async () => (await import('./pages/competitions.js')).competitionsPage()],
  [/^\/competitions\/new\/?$/, async () => (await import('./pages/competitions.js')).newCompetitionPage()],
  [/^\/competitions\/([^/]+)(?:\/([a-z]+))?\/?$/, async (m) => (await import('./pages/competitions.js')).competitionPage(decodeURIComponent(m[1]), m[2])],
  [/^\/account\/?$/, () => accountPage()],
  [/^\/admin\/?$/, () => adminPage()],
  [/^\/jobs\/?$/, () => jobsPage()],
  [/^\/jobs\/([^/]+)$/, (m) => jobPage(decodeURIComponent(m[1]))],
];

let renderSeq = 0;
async function render() {
  const seq = ++renderSeq;
  for (const fn of app.cleanup.splice(0)) { try { fn(); } catch { /* ignore */ } }
  const path = location.pathname;
  if (path === '/login' || path === '/signup') {
    if (app.me) return navigate('/projects', { replace: true });
    clear(app.root, path === '/login' ? loginPage() : signupPage());
    return;
  }
  if (!app.me) {
    // Signed out: only a public notebook can be shown, read-only.
    const m = path.match(SHARE_RE) || path.match(NOTEBOOK_RE);
    if (!m) return navigate('/login', { replace: true });
    let page;
    try { page = await sharePage(m[1], m[2]); } catch (e) { page = h('div', { class: 'page' }, errorBox(e)); }
    if (seq === renderSeq) clear(app.root, anonLayout(page));
    return;
  }
  // Signed in after "Fork to run" (or "sign in" on a read-only page): back there.
  const back = sessionStorage.getItem(AFTER_LOGIN);
  if (back) {
    sessionStorage.removeItem(AFTER_LOGIN);
    if (back.startsWith('/projects/') && back !== path) return navigate(back, { replace: true });
  }
  if (path === '/') return navigate('/projects', { replace: true });
  let page = null;
  try {
    for (const [re, fn] of routes) {
      const m = path.match(re);
      if (m) { page = await fn(m); break; }
    }
    if (!page) page = h('div', { class: 'page' }, h('h1', null, 'Not found'), h('p', null, 'No such page.'));
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) { app.me = null; return navigate('/login', { replace: true }); }
    page = h('div', { class: 'page' }, errorBox(e));
  }
  if (seq !== renderSeq) return;
  clear(app.root, layout(page));
}

// Links inside the app navigate without reloading.
document.addEventListener('click', (ev) => {
  const a = ev.target.closest && ev.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download') || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
});
setRender(render);
window.addEventListener('popstate', render);

(async () => {
  // Start fetching the notebook chunk alongside the session check.
  if (NOTEBOOK_RE.test(location.pathname)) import('./pages/notebook.js').catch(() => {});
  if (SHARE_RE.test(location.pathname)) import('./pages/share.js').catch(() => {});
  try { await loadMe(); } catch (e) { clear(app.root, errorBox(e)); return; }
  render();
})();
