// The app's shared state, which main.js (the router) and the pages both use,
// so that no page imports main.js: the signed-in user, the element pages
// render into, teardown on navigation, and navigation itself.
import { api, setCsrf, ApiError } from './api.js';

// me: the signed-in user (GET /api/v1/me) or null; root: the element the
// layout is drawn into; cleanup: what onLeave() registered for the page shown.
export const app = { me: null, root: document.getElementById('app'), cleanup: [] };

// The router's render(), set by main.js at start-up (setRender); navigate()
// calls it after changing the URL.
let renderPage = () => {};
export function setRender(fn) { renderPage = fn; }

// Pages register teardown (timers, event sources) here; run on navigation.
export function onLeave(fn) { app.cleanup.push(fn); }

// Go to `path` inside the app (a history entry, or replacing the current one).
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  renderPage();
}

// Load the signed-in user and their CSRF token; null when signed out.
export async function loadMe() {
  try {
    const me = await api.get('/api/v1/me');
    app.me = me;
    setCsrf(me.csrf_token);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    app.me = null;
    setCsrf(null);
  }
  return app.me;
}
