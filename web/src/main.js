// Eddy's browser app: a router over history URLs and the layout (the signed-in
// user, navigate() and onLeave() are in app.js, shared by the pages).
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
        link('/projects', 'Projects'), link('/jobs', 'Jobs'), link('/account', 'Account'),
        me.role === 'admin' ? link('/admin', 'Admin') : null),
      h('span', { class: 'spacer' }),
      h('span', { class: 'whoami', 'data-testid': 'whoami' }, `${me.username} · ${me.tier}`),
      h('button', { class: 'link', onclick: logout }, 'Sign out')),
    h('main', { id: 'main', tabindex: '-1' }, content));
}

const routes = [
  [/^\/projects\/?$/, () => projectsPage()],
  [/^\/projects\/([^/]+)\/notebook\/(.+)$/, async (m) => (await import('./pages/notebook.js')).notebookPage(decodeURIComponent(m[1]), decodeURI(m[2]))],
  [/^\/projects\/([^/]+)\/edit\/(.+)$/, (m) => fileEditorPage(decodeURIComponent(m[1]), decodeURI(m[2]))],
  [/^\/projects\/([^/]+)\/?$/, (m) => projectPage(decodeURIComponent(m[1]))],
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
  if (!app.me) return navigate('/login', { replace: true });
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
  if (/^\/projects\/[^/]+\/notebook\//.test(location.pathname)) import('./pages/notebook.js').catch(() => {});
  try { await loadMe(); } catch (e) { clear(app.root, errorBox(e)); return; }
  render();
})();
