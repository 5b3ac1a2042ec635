// End-to-end tests of the web app: a real `eddy serve` on a free port with a
// temporary data directory, driven by Debian's Chromium (headless) through
// playwright-core. Screenshots of every page go to the artifacts directory.
//
//   node tests/e2e/run.mjs --eddy build/cmd/eddy [--out DIR] [--web web/dist]
//
// A route the suite exercises that answers 404 (the router's "no route for")
// fails the suite: a test that needs jobs or kernels fails, never skips, when
// the server lacks the route, and every /api/ response of the pages is
// watched for such 404s. A failing test leaves FAIL-<name>.png of the page.
import { spawn, execFile, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const top = resolve(here, '..', '..');
const webDir = join(top, 'web');
const args = Object.fromEntries(process.argv.slice(2).reduce((a, v, i, all) => (v.startsWith('--') ? [...a, [v.slice(2), all[i + 1]]] : a), []));
const eddy = resolve(args.eddy || process.env.EDDY_BIN || join(top, 'build', 'cmd', 'eddy'));
const out = resolve(args.out || process.env.EDDY_E2E_OUT || join(top, 'build', 'e2e-artifacts'));
const dist = resolve(args.web || process.env.EDDY_WEB_DIR || join(webDir, 'dist'));
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

function die(msg) { console.error(`e2e: ${msg}`); process.exit(1); }
// A missing prerequisite is a skip (77) under CTest, a failure otherwise.
function missing(msg) { console.error(`e2e: SKIP all: ${msg}`); process.exit(process.env.EDDY_E2E_SKIP_MISSING ? 77 : 1); }
if (!existsSync(eddy)) die(`no eddy binary at ${eddy} (build the eddy target first)`);
if (!existsSync(join(webDir, 'node_modules', 'playwright-core'))) missing('web/node_modules is missing: run `npm ci` in web/');
if (!existsSync(chromiumPath)) missing(`no Chromium at ${chromiumPath} (Debian package chromium)`);
// Build the app when it is missing or older than its sources.
function newest(p) {
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(p).map((n) => newest(join(p, n))));
}
const sources = [join(webDir, 'src'), join(webDir, 'index.html'), join(webDir, 'package.json'), join(webDir, 'vite.config.js')];
if (!args.web && !process.env.EDDY_WEB_DIR &&
    (!existsSync(join(dist, 'index.html')) || Math.max(...sources.map(newest)) > statSync(join(dist, 'index.html')).mtimeMs)) {
  console.log('e2e: web/dist is missing or older than web/src; running npm run build');
  execFileSync('npm', ['run', 'build'], { cwd: webDir, stdio: 'inherit' });
}
if (!existsSync(join(dist, 'index.html'))) die(`no built app at ${dist}`);
const { chromium } = createRequire(join(webDir, 'package.json'))('playwright-core');
mkdirSync(out, { recursive: true });
// Screenshots of an earlier run (a FAIL-*.png above all) would mislead.
for (const f of readdirSync(out)) if (f.endsWith('.png')) rmSync(join(out, f), { force: true });

// ---- the server ---------------------------------------------------------------
const data = mkdtempSync(join(tmpdir(), 'eddy-e2e-'));
const ADMIN = { username: 'admin', password: 'admin-password-1' };
execFileSync(eddy, ['admin', 'create-user', '--data', data, '--username', ADMIN.username, '--email', 'admin@example.org',
  '--password', ADMIN.password, '--role', 'admin'], { stdio: 'pipe' });
const server = spawn(eddy, ['serve', '--data', data, '--listen', '127.0.0.1:0'], {
  env: { ...process.env, EDDY_WEB_DIR: dist }, stdio: ['ignore', 'pipe', 'pipe'],
});
let serverLog = '';
const base = await new Promise((res, rej) => {
  const t = setTimeout(() => rej(new Error(`eddy serve did not start:\n${serverLog}`)), 20000);
  const onData = (b) => {
    serverLog += b;
    const m = serverLog.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    if (m) { clearTimeout(t); res(m[1]); }
  };
  server.stdout.on('data', onData);
  server.stderr.on('data', onData);
  server.on('exit', (c) => rej(new Error(`eddy serve exited with ${c}:\n${serverLog}`)));
}).catch((e) => die(e.message));
console.log(`e2e: server ${base}, data ${data}, artifacts ${out}`);

// ---- a tiny runner --------------------------------------------------------------
const results = [];
let browser;
let failPage = null;   // the page screenshotted when a test fails
// EDDY_E2E_ONLY=<regex>: run only the tests whose names match, plus the ones
// that set up the user, project and notebook the others rely on, and the
// closing checks (a quick loop while working on one feature; the suite
// itself always runs them all).
const only = process.env.EDDY_E2E_ONLY ? new RegExp(process.env.EDDY_E2E_ONLY) : null;
const SETUP_TESTS = /^(sign_up_then_land_on_projects|create_a_project|create_edit_and_save_a_notebook|no_route_the_pages_used_answered_404|no_console_errors_on_the_pages)$/;
async function test(name, fn) {
  if (only && !only.test(name) && !SETUP_TESTS.test(name)) return;
  const t0 = Date.now();
  try {
    const r = await fn();
    if (r && r.skip) { results.push({ name, status: 'skip' }); console.log(`SKIP ${name}: ${r.skip}`); }
    else { results.push({ name, status: 'pass' }); console.log(`PASS ${name} (${Date.now() - t0} ms)`); }
  } catch (e) {
    results.push({ name, status: 'fail' });
    console.log(`FAIL ${name}: ${e.stack || e}`);
    // What the page showed when the test failed.
    if (failPage) await shot(failPage, `FAIL-${name}`).catch(() => {});
  }
}
function assert(cond, msg) { if (!cond) throw new Error(`assertion failed: ${msg}`); }
async function shot(page, name) { await page.screenshot({ path: join(out, `${name}.png`), fullPage: true }); }
async function fetchJson(page, path) {
  return page.evaluate(async (p) => { const r = await fetch(p); return { status: r.status, body: await r.text() }; }, path);
}

// A REST call from the page's session, as another tab would make it:
// {status, etag, body}.
async function rest(page, method, path, body, headers = {}) {
  return page.evaluate(async ({ method, path, body, headers }) => {
    const h = { ...headers };
    if (method !== 'GET') h['X-CSRF-Token'] = (await (await fetch('/api/v1/me')).json()).csrf_token;
    if (body !== null && typeof body === 'object') { h['Content-Type'] = 'application/json'; body = JSON.stringify(body); }
    const r = await fetch(path, { method, headers: h, body: body ?? undefined });
    return { status: r.status, etag: r.headers.get('ETag'), body: await r.text() };
  }, { method, path, body: body ?? null, headers });
}
const fileUrl = (id, path) => `/api/v1/projects/${encodeURIComponent(id)}/files/${path.split('/').map(encodeURIComponent).join('/')}`;

// Server features of the workspaces contract (API.md "Workspaces", issue 12)
// each test probes before it runs. A feature the server lacks fails its test;
// a feature named in SKIP_MISSING (none: every one has landed) prints
// "SKIP <test>: server lacks <route>" instead.
const SKIP_MISSING = new Set([]);
function needServer(feature, ok, route) {
  if (ok) return null;
  if (SKIP_MISSING.has(feature)) return { skip: `server lacks ${route}` };
  throw new Error(`the server lacks ${route}`);
}

const USER = { username: `ada${Date.now() % 100000}`, email: 'ada@example.org', password: 'correct-horse-9' };
const state = {};
let exitCode = 1;
try {
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 820 } });
  // Every /api/ answer of the pages: a 404 from the router (no such route) is
  // a route this suite exercises that the server lacks, and fails the suite.
  const missingRoutes = [];
  const pending404 = [];
  ctx.on('response', (r) => {
    if (r.status() !== 404 || !new URL(r.url()).pathname.startsWith('/api/')) return;
    pending404.push(r.text().then((t) => { if (/no route for/.test(t)) missingRoutes.push(`${r.request().method()} ${r.url()}`); }).catch(() => {}));
  });
  const page = await ctx.newPage();
  failPage = page;
  page.setDefaultTimeout(10000);
  page.on('dialog', (d) => d.accept(d.type() === 'prompt' ? 'first version' : undefined));
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()} at ${JSON.stringify(m.location())}`); });

  await test('notebook_merge_rules', async () => {
    // web/src/nbmerge.js is plain ESM: its rules checked here without a browser.
    const { mergeCells, baseOf } = await import(join(webDir, 'src', 'nbmerge.js'));
    const out = (t) => [{ output_type: 'stream', name: 'stdout', text: t }];
    const c = (id, source, outputs = [], n = null, t = 'code') => ({ id, cell_type: t, source, metadata: {}, ...(t === 'code' ? { outputs, execution_count: n } : {}) });
    const B = baseOf([c('a', 'x=1'), c('b', 'print(2)', out('2\n'), 1), c('d', 'gone here')]);
    const ids = (m) => m.cells.map((x) => x.id).join();
    // a edited here, d deleted here; the server adds r after a and reruns b elsewhere
    let m = mergeCells([c('a', 'x=2'), c('b', 'print(2)', out('2\n'), 1)],
      [c('a', 'x=1'), c('r', 'new'), c('b', 'print(2)', out('2\n3\n'), 2), c('d', 'gone here')], B);
    assert(ids(m) === 'a,r,b' && !m.conflicts.length, `order ${ids(m)}`);
    assert(m.cells[0].source === 'x=2' && m.cells[2].outputs[0].text === '2\n3\n' && m.cells[2].execution_count === 2, 'local source, server outputs');
    assert(m.dropped.join() === 'd' && m.inserted.join() === 'r', 'a local deletion of an unchanged cell stands');
    // deleted here but changed on the server: kept
    m = mergeCells([c('a', 'x=1')], [c('a', 'x=1'), c('d', 'changed there')], B);
    assert(ids(m) === 'a,d', `kept a cell changed elsewhere: ${ids(m)}`);
    // only the server changed a source: taken; both changed: a conflict
    m = mergeCells([c('a', 'x=1')], [c('a', 'x=9')], B);
    assert(m.cells[0].source === 'x=9' && !m.conflicts.length, 'server-only edit taken');
    m = mergeCells([c('a', 'x=3')], [c('a', 'x=4')], B);
    assert(m.conflicts.join() === 'a', 'both edited: conflict');
    // running here: the longer outputs win, either way
    m = mergeCells([c('b', 'print(2)', out('1\n2\n3\n'))], [c('b', 'print(2)', out('1\n'), 5)], B, { running: new Set(['b']) });
    assert(m.cells[0].outputs[0].text === '1\n2\n3\n', 'running: local longer kept');
    m = mergeCells([c('b', 'print(2)', out('1\n'))], [c('b', 'print(2)', out('1\n2\n'), 5)], B, { running: new Set(['b']) });
    assert(m.cells[0].outputs[0].text === '1\n2\n', 'running: the fold ahead wins');
    // run here, same execution in the file: longer; another execution: the side that changed
    m = mergeCells([c('b', 'print(2)', out('x\n'), 7)], [c('b', 'print(2)', out('x\ny\n'), 7)], B, { ranHere: new Set(['b']) });
    assert(m.cells[0].outputs[0].text === 'x\ny\n', 'same run: longer');
    m = mergeCells([c('b', 'print(2)', out('new run, short\n'), 8)], [c('b', 'print(2)', out('2\n'), 1)], B, { ranHere: new Set(['b']) });
    assert(m.cells[0].outputs[0].text === 'new run, short\n', 'a newer run here beats the unchanged old outputs');
    // a server-only cell at the top, and one after a cell the page deleted
    m = mergeCells([c('a', 'x=1')], [c('z', 'top'), c('a', 'x=1'), c('d', 'gone here'), c('y', 'after d')], B);
    assert(ids(m) === 'z,a,y', `placement ${ids(m)}`);
    // a cell turned markdown here keeps no outputs
    m = mergeCells([c('b', 'print(2)', [], null, 'markdown')], [c('b', 'print(2)', out('2\n3\n'), 2)], B);
    assert(m.cells[0].cell_type === 'markdown' && m.cells[0].outputs === undefined, 'markdown has no outputs');
  });

  await test('app_shell_has_csp_and_long_cached_assets', async () => {
    const r = await page.request.get(`${base}/projects`);
    assert(r.status() === 200, `status ${r.status()}`);
    const csp = r.headers()['content-security-policy'] || '';
    assert(csp.includes("script-src 'self'") && csp.includes("object-src 'none'"), `CSP: ${csp}`);
    const js = (await r.text()).match(/\/assets\/[^"]+\.js/);
    assert(js, 'index.html names a script');
    const a = await page.request.get(`${base}${js[0]}`);
    assert(a.status() === 200 && /immutable/.test(a.headers()['cache-control']), 'assets are cached');
    assert(/javascript/.test(a.headers()['content-type']), 'script content type');
    const trav = await page.request.get(`${base}/assets/%2e%2e/index.html`);
    assert(trav.status() === 404, `traversal answered ${trav.status()}`);
    const api404 = await page.request.get(`${base}/api/v1/no-such-route`);
    assert(api404.status() === 404 && /json/.test(api404.headers()['content-type']), 'unknown /api/ path stays a JSON 404');
  });

  await test('sign_up_then_land_on_projects', async () => {
    await page.goto(`${base}/`);
    await page.waitForURL('**/login');
    await shot(page, '01-login');
    await page.click('text=Create an account');
    await page.fill('input[name=username]', USER.username);
    await page.fill('input[name=email]', USER.email);
    await page.fill('input[name=password]', USER.password);
    await shot(page, '02-signup');
    await page.click('button[type=submit]');
    await page.waitForURL('**/projects');
    await page.waitForSelector(`[data-testid=whoami]:has-text("${USER.username}")`);
    await shot(page, '03-projects-empty');
  });

  await test('create_a_project', async () => {
    await page.fill('input[name=name]', 'first-project');
    await page.fill('input[name=description]', 'made by the e2e test');
    await page.click('text=Create project');
    await page.waitForURL(/\/projects\/[^/]+$/);
    state.projectUrl = page.url();
    state.projectId = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
    await page.waitForSelector('h1:has-text("first-project")');
    const r = await fetchJson(page, '/api/v1/projects');
    assert(JSON.parse(r.body).items.some((p) => p.name === 'first-project'), 'the project is listed by the API');
    await shot(page, '04-project-files');
  });

  await test('upload_download_and_edit_a_file', async () => {
    await page.setInputFiles('input[aria-label="Upload files"]', { name: 'data.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') });
    await page.click('button:has-text("Upload")');
    await page.waitForSelector('[data-testid=files] a:has-text("data.csv")');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=files] tr:has-text("data.csv") button:has-text("Download")')]);
    assert(dl.suggestedFilename() === 'data.csv', `download name ${dl.suggestedFilename()}`);
    const got = await (await import('node:fs/promises')).readFile(await dl.path(), 'utf8');
    assert(got === 'a,b\n1,2\n', `downloaded ${JSON.stringify(got)}`);
    await page.click('[data-testid=files] a:has-text("data.csv")');
    await page.waitForSelector('textarea.editor');
    await page.fill('textarea.editor', 'a,b\n3,4\n');
    await page.keyboard.press('Control+s');
    await page.waitForSelector('text=Saved at');
    const r = await fetchJson(page, `/api/v1/projects/${encodeURIComponent(state.projectId)}/files/data.csv`);
    assert(r.body === 'a,b\n3,4\n', `saved ${JSON.stringify(r.body)}`);
    await shot(page, '04b-file-editor');
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files]');
  });

  await test('file_list_shows_a_file_written_elsewhere_within_1_5_s', async () => {
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files] tr[data-path="data.csv"]');
    await page.waitForTimeout(300);
    // Another writer (a kernel, another tab, the CLI) puts a file in the
    // working tree; the open file view must show it without a reload.
    const t0 = Date.now();
    const r = await rest(page, 'PUT', fileUrl(state.projectId, 'live/from-elsewhere.txt'), 'written elsewhere\n');
    assert(r.status === 200 || r.status === 201, `PUT ${r.status}`);
    await page.waitForSelector('[data-testid=files] tr[data-path="live/from-elsewhere.txt"]', { timeout: 1500 });
    console.log(`e2e: a file written elsewhere showed in the file view after ${Date.now() - t0} ms`);
    const d = await rest(page, 'DELETE', fileUrl(state.projectId, 'live/from-elsewhere.txt'));
    assert(d.status === 204, `DELETE ${d.status}`);
    await page.waitForSelector('[data-testid=files] tr[data-path="live/from-elsewhere.txt"]', { state: 'detached', timeout: 1500 });
    // The poll is one request at a time, about once a second.
    const seen = [];
    const onReq = (q) => { if (q.method() === 'GET' && new URL(q.url()).pathname.endsWith('/files')) seen.push(Date.now()); };
    page.on('request', onReq);
    await page.waitForTimeout(3200);
    assert(seen.length >= 1 && seen.length <= 5, `${seen.length} file-list requests in 3.2 s`);
    // A hidden tab does not poll; showing it again refreshes at once.
    const setVis = (v) => page.evaluate((v) => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => v });
      document.dispatchEvent(new Event('visibilitychange'));
    }, v);
    await setVis('hidden');
    await page.waitForTimeout(300);   // one request may have been in flight
    seen.length = 0;
    await page.waitForTimeout(2500);
    const whileHidden = seen.length;
    await setVis('visible');
    await page.waitForTimeout(500);
    page.off('request', onReq);
    assert(whileHidden === 0, `${whileHidden} file-list requests while hidden`);
    assert(seen.length >= 1, 'showing the tab again refreshed the list');
  });

  await test('file_view_and_account_show_workspace_usage', async () => {
    const q = JSON.parse((await fetchJson(page, '/api/v1/quota')).body);
    const s = needServer('workspace_quota', q.workspace && typeof q.workspace.used_bytes === 'number', 'GET /api/v1/quota .workspace');
    if (s) return s;
    await page.goto(state.projectUrl);
    const t = await (await page.waitForSelector('[data-testid=workspace-usage]')).textContent();
    assert(/Workspace: .*(of|no limit)/.test(t), `file view: ${t}`);
    await page.goto(`${base}/account`);
    const a = await (await page.waitForSelector('[data-testid=workspace]')).textContent();
    assert(/ of |no limit/.test(a), `account: ${a}`);
    await shot(page, '04c-account-workspace');
  });

  await test('create_file_never_empties_an_existing_one', async () => {
    await page.goto(state.projectUrl);
    const before = (await rest(page, 'GET', fileUrl(state.projectId, 'data.csv'))).body;
    assert(before.length > 0, 'data.csv has content');
    await page.fill('input[aria-label="New file name"]', 'data.csv');
    await page.click('text=Create file');
    await page.waitForURL(/\/edit\/data\.csv$/);
    await page.waitForSelector('textarea.editor');
    assert((await page.inputValue('textarea.editor')) === before, 'the editor opened the existing file');
    assert((await rest(page, 'GET', fileUrl(state.projectId, 'data.csv'))).body === before, 'Create file left the existing file alone');
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files]');
  });

  await test('stale_save_asks_and_overwrite_and_reload_work', async () => {
    const url = fileUrl(state.projectId, 'stale.txt');
    let r = await rest(page, 'PUT', url, 'v1\n');
    assert(r.status === 200 || r.status === 201, `PUT ${r.status}`);
    const g = await rest(page, 'GET', url);
    const probe = await rest(page, 'PUT', url, 'v1\n', { 'If-Match': '"not-the-etag"' });
    const s = needServer('etag', g.etag && probe.status === 412, 'ETag on GET and 412 on a stale If-Match (PUT .../files/{path})');
    if (s) return s;
    assert(/precondition_failed/.test(probe.body), `412 body: ${probe.body}`);
    await page.goto(`${state.projectUrl}/edit/stale.txt`);
    await page.waitForSelector('textarea.editor');
    // Someone else saves; then I save: the page must ask.
    r = await rest(page, 'PUT', url, 'theirs\n');
    assert(r.status === 200, `their PUT ${r.status}`);
    await page.fill('textarea.editor', 'mine\n');
    await page.keyboard.press('Control+s');
    await page.waitForSelector('[data-testid=stale-dialog]:has-text("This file changed since you opened it")');
    await shot(page, '04d-stale-dialog');
    await page.click('[data-testid=stale-overwrite]');
    await page.waitForSelector('[data-testid=save-status]:has-text("Saved at")');
    assert((await rest(page, 'GET', url)).body === 'mine\n', 'Overwrite saved mine');
    // Again, and this time Reload: theirs shows and stays.
    r = await rest(page, 'PUT', url, 'theirs 2\n');
    await page.fill('textarea.editor', 'mine 2\n');
    await page.keyboard.press('Control+s');
    await page.waitForSelector('[data-testid=stale-dialog]');
    await page.click('[data-testid=stale-reload]');
    await page.waitForSelector('[data-testid=save-status]:has-text("Reloaded")');
    assert((await page.inputValue('textarea.editor')) === 'theirs 2\n', 'Reload shows theirs');
    assert((await rest(page, 'GET', url)).body === 'theirs 2\n', 'Reload wrote nothing');
    // The page now holds the fresh ETag: the next save goes straight through.
    await page.fill('textarea.editor', 'mine 3\n');
    await page.keyboard.press('Control+s');
    await page.waitForSelector('[data-testid=save-status]:has-text("Saved at")');
    assert(!(await page.$('[data-testid=stale-dialog]')), 'no dialog on a fresh save');
    assert((await rest(page, 'GET', url)).body === 'mine 3\n', 'saved after reload');
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files]');
  });

  await test('create_edit_and_save_a_notebook', async () => {
    await page.fill('input[aria-label="New file name"]', 'analysis.ipynb');
    await page.click('text=Create file');
    await page.waitForURL(/\/notebook\/analysis\.ipynb$/);
    await page.waitForSelector('.cell .cm-content');
    // edit mode: type into the first cell
    await page.click('.cell .cm-content');
    await page.keyboard.type('x = 21 * 2\nprint(x)');
    await page.keyboard.press('Escape');
    assert((await page.textContent('[data-testid=mode]')) === 'command', 'Escape enters command mode');
    // B inserts below, M makes it markdown, Enter edits
    await page.keyboard.press('b');
    await page.keyboard.press('m');
    await page.keyboard.press('Enter');
    await page.keyboard.type('# Results\nThe answer is $x^2 + 1$.');
    await page.keyboard.press('Shift+Enter');       // renders the markdown, moves on
    await page.waitForSelector('[data-testid=markdown] h1:has-text("Results")');
    await page.waitForSelector('[data-testid=markdown] .katex');
    const cells = await page.$$eval('.cell', (els) => els.map((e) => e.dataset.type));
    assert(cells[0] === 'code' && cells[1] === 'markdown', `cells ${cells}`);
    // DD deletes the (new, empty) third cell created by Shift-Enter at the end
    if (cells.length === 3) {
      await page.keyboard.press('Escape');
      await page.keyboard.press('d');
      await page.keyboard.press('d');
      await page.waitForFunction(() => document.querySelectorAll('.cell').length === 2);
    }
    // autosave: the working tree gets both cells without pressing Save
    let nb = null;
    for (let i = 0; i < 40; i++) {
      const r = await fetchJson(page, `/api/v1/projects/${encodeURIComponent(state.projectId)}/files/analysis.ipynb`);
      nb = JSON.parse(r.body);
      if (nb.cells.length === 2 && nb.cells[1].source.includes('Results')) break;
      await page.waitForTimeout(250);
    }
    await page.waitForSelector('[data-testid=save-status]:has-text("Saved ")');
    assert(nb.nbformat === 4 && nb.cells.length === 2, `saved ${nb.cells.length} cells`);
    assert(nb.cells[0].source.includes('print(x)') && nb.cells[1].cell_type === 'markdown', 'autosave wrote both cells');
    await page.click('[data-testid=save-version]');
    await page.waitForSelector('.toast:has-text("Saved version")');
    const v = JSON.parse((await fetchJson(page, `/api/v1/projects/${encodeURIComponent(state.projectId)}/versions`)).body);
    assert(v.items.length >= 1 && v.items[0].message === 'first version', 'version saved with its message');
    await shot(page, '05-notebook');
    state.notebookUrl = page.url();
  });

  await test('markdown_html_renders_only_in_a_sandboxed_iframe', async () => {
    const mark = consoleErrors.length;
    await page.click('.cell[data-type=markdown] [data-testid=markdown]');
    await page.keyboard.press('b');
    await page.keyboard.press('m');
    await page.keyboard.press('Enter');
    await page.keyboard.type('<b id="evil" onclick="x()">bold</b> <script>window.pwned=1</script>');
    await page.keyboard.press('Shift+Enter');
    const frame = await page.waitForSelector('.cell[data-type=markdown] iframe.sandboxed');
    assert((await frame.getAttribute('sandbox')) === '', 'sandbox without allow-same-origin or scripts');
    assert(await page.evaluate(() => !document.getElementById('evil') && !window.pwned), 'no user HTML in the page itself');
    // Chromium reports the (blocked) inline handler while the sanitiser parses
    // it: that report is the CSP working, not an error of the app.
    const extra = consoleErrors.splice(mark);
    consoleErrors.push(...extra.filter((e) => !/Content Security Policy/.test(e)));
    await page.keyboard.press('Escape');
    await page.keyboard.press('Shift+Tab');
  });

  await test('saved_outputs_render_text_image_html_and_traceback', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const nb = {
      nbformat: 4, nbformat_minor: 5, metadata: {},
      cells: [{
        cell_type: 'code', id: 'c1', metadata: {}, execution_count: 3, source: 'show()',
        outputs: [
          { output_type: 'stream', name: 'stdout', text: ['printed text\n'] },
          { output_type: 'display_data', metadata: {}, data: { 'image/png': png, 'text/plain': '<Figure>' } },
          { output_type: 'execute_result', execution_count: 3, metadata: {}, data: { 'text/html': '<table id="df"><tr><td>1</td></tr></table><script>parent.pwned=1</script>', 'text/plain': 'df' } },
          { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: ['\u001b[31mTraceback (most recent call last)\u001b[0m', 'ValueError: bad'] },
        ],
      }],
    };
    const csrf = await page.evaluate(async () => (await (await fetch('/api/v1/me')).json()).csrf_token);
    const st = await page.evaluate(async ({ id, csrf, body }) => (await fetch(`/api/v1/projects/${encodeURIComponent(id)}/files/outputs.ipynb`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body })).status,
      { id: state.projectId, csrf, body: JSON.stringify(nb) });
    assert(st === 200 || st === 201, `PUT outputs.ipynb: ${st}`);
    await page.goto(`${base}/projects/${encodeURIComponent(state.projectId)}/notebook/outputs.ipynb`);
    await page.waitForSelector('.outputs pre.stream:has-text("printed text")');
    const img = await page.waitForSelector('.outputs img.out.image');
    assert(await img.evaluate((i) => i.complete && i.naturalWidth === 1), 'the PNG decoded');
    const frame = await page.waitForSelector('.outputs iframe.sandboxed');
    assert((await frame.getAttribute('sandbox')) === '', 'HTML output is sandboxed');
    assert(await page.evaluate(() => !window.pwned && !document.getElementById('df')), 'HTML output stays out of the page');

    const tb = await page.textContent('.outputs pre.error');
    assert(tb.includes('ValueError: bad') && !tb.includes('\u001b'), `traceback: ${tb}`);
    assert((await page.textContent('.cell .prompt')).includes('[3]'), 'execution count shown');
    await shot(page, '05b-notebook-outputs');
  });

  await test('notebook_first_load_is_measured', async () => {
    const p2 = await ctx.newPage();
    const t0 = Date.now();
    await p2.goto(state.notebookUrl);
    await p2.waitForSelector('.cell .cm-content');
    const ms = Date.now() - t0;
    const nav = await p2.evaluate(() => { const n = performance.getEntriesByType('navigation')[0]; return Math.round(n.domContentLoadedEventEnd); });
    console.log(`e2e: notebook page first load ${ms} ms to editable cells (DOMContentLoaded ${nav} ms)`);
    state.loadMs = ms;
    // Reported, not asserted: the machine is shared, and tests make no timing assertions.
    if (ms >= 1000) console.log(`e2e: WARNING notebook first load ${ms} ms is over the 1 s target`);
    await p2.close();
  });

  await test('notebook_autosave_merges_a_cell_added_elsewhere_with_the_local_edit', async () => {
    const url = fileUrl(state.projectId, 'merge.ipynb');
    const cell = (id, source, outputs = []) => ({ cell_type: 'code', id, metadata: {}, source, outputs, execution_count: null });
    const nb0 = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [cell('c1', 'a = 1'), cell('c2', 'b = 2')] };
    let r = await rest(page, 'PUT', url, JSON.stringify(nb0));
    assert(r.status === 200 || r.status === 201, `PUT ${r.status}`);
    const probe = await rest(page, 'PUT', url, JSON.stringify(nb0), { 'If-Match': '"not-the-etag"' });
    const s = needServer('etag', r.etag && probe.status === 412, 'ETag and 412 on a stale If-Match (PUT .../files/{path})');
    if (s) return s;
    await page.goto(`${state.projectUrl}/notebook/merge.ipynb`);
    await page.waitForSelector('.cell[data-cell-id=c2] .cm-content');
    // Elsewhere (another tab, the API, the kernel's output fold): a cell is
    // added after c1, and c1 gets an output.
    const theirs = JSON.parse((await rest(page, 'GET', url)).body);
    theirs.cells.splice(1, 0, { ...cell('rest1', 'print("added by REST")') });
    theirs.cells[0].outputs = [{ output_type: 'stream', name: 'stdout', text: 'from the fold\n' }];
    r = await rest(page, 'PUT', url, JSON.stringify(theirs));
    assert(r.status === 200, `their PUT ${r.status}`);
    // Here: edit c2. Autosave meets the stale ETag and merges.
    await page.click('.cell[data-cell-id=c2] .cm-content');
    await page.keyboard.press('End');
    await page.keyboard.type(' + 40');
    let nb;
    for (let i = 0; i < 60; i++) {
      nb = JSON.parse((await rest(page, 'GET', url)).body);
      if (nb.cells.some((c) => c.id === 'c2' && [].concat(c.source).join('') === 'b = 2 + 40')) break;
      await page.waitForTimeout(200);
    }
    const ids = nb.cells.map((c) => c.id);
    assert(ids.join() === 'c1,rest1,c2', `cells after the merge: ${ids}`);
    assert([].concat(nb.cells[2].source).join('') === 'b = 2 + 40', 'the local edit is saved');
    assert([].concat(nb.cells[1].source).join('').includes('added by REST'), 'the REST cell is kept');
    assert(JSON.stringify(nb.cells[0].outputs).includes('from the fold'), 'the output written elsewhere is kept');
    await page.waitForSelector('.cell[data-cell-id=rest1]');
    await page.waitForSelector('.cell[data-cell-id=c1] .outputs pre.stream:has-text("from the fold")');
    assert(!(await page.$('[data-testid=stale-dialog]')), 'no dialog when the merge is clean');
    await page.waitForSelector('[data-testid=save-status]:has-text("Saved ")');
    await shot(page, '05c-notebook-merged');

    // Both sides change the same cell: the page asks; Overwrite keeps mine.
    const theirs2 = JSON.parse((await rest(page, 'GET', url)).body);
    theirs2.cells[0].source = 'a = 100  # theirs';
    r = await rest(page, 'PUT', url, JSON.stringify(theirs2));
    assert(r.status === 200, `their second PUT ${r.status}`);
    await page.click('.cell[data-cell-id=c1] .cm-content');
    await page.keyboard.press('End');
    await page.keyboard.type('  # mine');
    await page.waitForSelector('[data-testid=stale-dialog]:has-text("This file changed since you opened it")', { timeout: 10000 });
    await page.click('[data-testid=stale-overwrite]');
    await page.waitForSelector('[data-testid=save-status]:has-text("Saved ")');
    nb = JSON.parse((await rest(page, 'GET', url)).body);
    assert([].concat(nb.cells[0].source).join('') === 'a = 1  # mine', `Overwrite saved mine: ${JSON.stringify(nb.cells[0].source)}`);
    assert(nb.cells.map((c) => c.id).join() === 'c1,rest1,c2', `cells after overwrite: ${nb.cells.map((c) => c.id)}`);

    // Once more, and Reload: the page shows theirs and writes nothing.
    const theirs3 = JSON.parse((await rest(page, 'GET', url)).body);
    theirs3.cells[0].source = 'a = 7  # theirs';
    theirs3.cells.push({ ...cell('rest2', 'print("second REST cell")') });
    r = await rest(page, 'PUT', url, JSON.stringify(theirs3));
    assert(r.status === 200, `their third PUT ${r.status}`);
    await page.click('.cell[data-cell-id=c1] .cm-content');
    await page.keyboard.press('End');
    await page.keyboard.type('!');
    await page.waitForSelector('[data-testid=stale-dialog]', { timeout: 10000 });
    await page.click('[data-testid=stale-reload]');
    await page.waitForSelector('[data-testid=save-status]:has-text("Reloaded")');
    await page.waitForSelector('.cell[data-cell-id=rest2]');
    const c1 = await page.textContent('.cell[data-cell-id=c1] .cm-content');
    assert(c1 === 'a = 7  # theirs', `the page shows theirs: ${c1}`);
    nb = JSON.parse((await rest(page, 'GET', url)).body);
    assert(JSON.stringify(nb) === JSON.stringify(theirs3), 'Reload wrote nothing');
    await page.keyboard.press('Escape');
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files]');
  });

  await test('versions_restore_and_diff', async () => {
    await page.goto(`${state.projectUrl}?tab=versions`);
    await page.waitForSelector('[data-testid=versions] tbody tr');
    // change the working tree, then diff against the saved version
    await page.evaluate(async ({ id, csrf }) => {
      const r = await fetch(`/api/v1/projects/${encodeURIComponent(id)}/files/notes.txt`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: 'hello\n' });
      if (!r.ok) throw new Error(`PUT ${r.status}`);
    }, { id: state.projectId, csrf: await page.evaluate(async () => (await (await fetch('/api/v1/me')).json()).csrf_token) });
    await page.click('text=Diff vs working tree');
    await page.waitForSelector('[data-testid=diff]');
    await shot(page, '06-versions-diff');
    // Restore asks how: keep files the version lacks (the default), or exactly the version.
    await page.click('[data-testid=versions] tr:has(td:text-is("first version")) button:has-text("Restore")');
    await page.waitForSelector('[data-testid=restore-dialog]:has-text("Keep files that are not in this version")');
    assert(await page.isChecked('[data-testid=restore-keep_untracked]'), 'keep_untracked is the default');
    await shot(page, '06b-restore-dialog');
    await page.check('[data-testid=restore-exact]');
    const [req] = await Promise.all([
      page.waitForRequest((q) => q.method() === 'POST' && /\/restore$/.test(q.url())),
      page.click('[data-testid=restore-confirm]'),
    ]);
    assert(JSON.parse(req.postData() || '{}').mode === 'exact', `restore body: ${req.postData()}`);
    await page.waitForURL(/\/projects\/[^/?]+$/);
    await page.waitForSelector('[data-testid=files]');
    const files = await page.$$eval('[data-testid=files] tbody td:first-child', (t) => t.map((x) => x.textContent));
    assert(files.includes('analysis.ipynb') && !files.includes('notes.txt'), `after an exact restore: ${files}`);
  });

  await test('restore_keep_untracked_keeps_files_the_version_lacks', async () => {
    const r = await rest(page, 'PUT', fileUrl(state.projectId, 'checkpoint.txt'), 'epoch 3\n');
    assert(r.status === 200 || r.status === 201, `PUT ${r.status}`);
    await page.goto(`${state.projectUrl}?tab=versions`);
    await page.click('[data-testid=versions] tr:has(td:text-is("first version")) button:has-text("Restore")');
    await page.waitForSelector('[data-testid=restore-dialog]');
    // Cancel sends nothing.
    let posted = 0;
    const onReq = (q) => { if (q.method() === 'POST' && /\/restore$/.test(q.url())) posted++; };
    page.on('request', onReq);
    await page.click('[data-testid=restore-dialog] button:has-text("Cancel")');
    await page.waitForSelector('[data-testid=restore-dialog]', { state: 'detached' });
    await page.waitForTimeout(200);
    page.off('request', onReq);
    assert(posted === 0, 'Cancel restored nothing');
    await page.click('[data-testid=versions] tr:has(td:text-is("first version")) button:has-text("Restore")');
    const [req] = await Promise.all([
      page.waitForRequest((q) => q.method() === 'POST' && /\/restore$/.test(q.url())),
      page.click('[data-testid=restore-confirm]'),
    ]);
    assert(JSON.parse(req.postData() || '{}').mode === 'keep_untracked', `restore body: ${req.postData()}`);
    await page.waitForURL(/\/projects\/[^/?]+$/);
    await page.waitForSelector('[data-testid=files] tr[data-path="analysis.ipynb"]');
    const files = await page.$$eval('[data-testid=files] tbody td:first-child', (t) => t.map((x) => x.textContent));
    assert(files.includes('checkpoint.txt'), `keep_untracked kept checkpoint.txt: ${files}`);
  });

  await test('version_lists_large_files_not_versioned', async () => {
    const id = state.projectId;
    const weights = 'not really weights\n'.repeat(64);
    for (const [p, b] of [['.eddyignore', '*.bin\n'], ['weights.bin', weights]]) {
      const r = await rest(page, 'PUT', fileUrl(id, p), b);
      assert(r.status === 200 || r.status === 201, `PUT ${p}: ${r.status}`);
    }
    const v = await rest(page, 'POST', `/api/v1/projects/${encodeURIComponent(id)}/versions`, { message: 'with large files' });
    assert(v.status === 201, `POST version ${v.status}: ${v.body}`);
    const ver = JSON.parse(v.body);
    const s = needServer('large_files', Array.isArray(ver.large_files), 'large_files in a version (POST /api/v1/projects/{id}/versions)');
    if (s) return s;
    const lf = ver.large_files.find((f) => f.path === 'weights.bin');
    assert(lf && lf.size === weights.length, `large_files: ${JSON.stringify(ver.large_files)}`);
    assert(!(ver.files || []).includes('weights.bin'), 'weights.bin is not tracked');
    const sha = (await import('node:crypto')).createHash('sha256').update(weights).digest('hex');
    assert(lf.sha256 === sha, `sha256 ${lf.sha256}`);
    await page.goto(`${state.projectUrl}?tab=versions`);
    const row = await page.waitForSelector(`[data-testid=large-files][data-version="${ver.id}"]`);
    const t = await row.textContent();
    assert(/large files, not versioned/i.test(t) && t.includes('weights.bin') && t.includes(sha.slice(0, 12)) && t.includes('1.2 KB'), `row: ${t}`);
    await shot(page, '06c-large-files');
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files]');
  });

  await test('fork_a_project', async () => {
    await page.click('button:has-text("Fork")');
    await page.waitForSelector('.toast:has-text("Forked")');
    await page.waitForSelector('[data-testid=files] tbody tr');
    await shot(page, '07-fork');
  });

  await test('create_an_api_key_and_use_it_from_curl', async () => {
    await page.goto(`${base}/account`);
    await page.waitForSelector('[data-testid=balance]');
    await page.fill('input[aria-label="Key name"]', 'laptop');
    await page.click('text=Create key');
    const key = (await (await page.waitForSelector('[data-testid=new-key]')).textContent()).trim();
    assert(/^eddy_prod_/.test(key), `key ${key}`);
    await shot(page, '08-account-key');
    const { stdout } = await promisify(execFile)('curl', ['-sS', '-H', `Authorization: Bearer ${key}`, `${base}/api/v1/me`]);
    const me = JSON.parse(stdout);
    assert(me.username === USER.username, `curl /me: ${stdout}`);
    await page.reload();
    await page.waitForSelector('[data-testid=keys] tbody tr');
    assert(!(await page.content()).includes(key), 'the key is shown once only');
    await page.click('[data-testid=keys] tr:has-text("laptop") button:has-text("Revoke")');
    await page.waitForSelector('.toast:has-text("Key revoked")');
    const { stdout: code } = await promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-H', `Authorization: Bearer ${key}`, `${base}/api/v1/me`]);
    assert(code === '401', `a revoked key answers ${code}`);
  });

  await test('admin_grants_coins_and_user_balance_updates', async () => {
    const before = await page.textContent('[data-testid=balance]');
    const actx = await browser.newContext({ viewport: { width: 1366, height: 820 } });
    const ap = await actx.newPage();
    ap.setDefaultTimeout(10000);
    await ap.goto(`${base}/login`);
    await ap.fill('input[name=username]', ADMIN.username);
    await ap.fill('input[name=password]', ADMIN.password);
    await ap.click('button[type=submit]');
    await ap.waitForURL('**/projects');
    await ap.click('nav >> text=Admin');
    await ap.waitForSelector(`[data-testid=users] tr[data-user="${USER.username}"]`);
    const row = `[data-testid=users] tr[data-user="${USER.username}"]`;
    await ap.fill(`${row} input[type=number]`, '12.5');
    await ap.fill(`${row} input[aria-label^="Reason"]`, 'e2e grant');
    await ap.click(`[data-testid=grant-${USER.username}]`);
    await ap.waitForSelector('.toast:has-text("Granted")');
    await shot(ap, '09-admin');
    await actx.close();
    await page.reload();
    await page.waitForSelector('[data-testid=balance]');
    const after = await page.textContent('[data-testid=balance]');
    assert(after !== before && /12\.5/.test(after), `balance ${before} -> ${after}`);
    await page.waitForSelector('[data-testid=ledger] td:has-text("grant")');
    await shot(page, '10-account-after-grant');
  });

  await test('admin_audit_log_names_users_and_sign_ups', async () => {
    const actx = await browser.newContext({ viewport: { width: 1366, height: 820 } });
    try {
      const ap = await actx.newPage();
      ap.setDefaultTimeout(10000);
      await ap.goto(`${base}/login`);
      await ap.fill('input[name=username]', ADMIN.username);
      await ap.fill('input[name=password]', ADMIN.password);
      await ap.click('button[type=submit]');
      await ap.waitForURL('**/projects');
      await ap.goto(`${base}/admin`);
      await ap.waitForSelector('[data-testid=audit] tr[data-action="auth.signup"]');
      const actors = await ap.$$eval('[data-testid=audit] tbody tr', (rs) => rs.map((r) => ({ action: r.dataset.action, actor: r.children[1].textContent })));
      const signup = actors.filter((a) => a.action === 'auth.signup');
      assert(signup.some((a) => a.actor.includes(USER.username)), `the sign-up shows the user: ${JSON.stringify(signup)}`);
      assert(!actors.some((a) => /^\d+$/.test(a.actor)), `actors shown as numbers: ${JSON.stringify(actors.filter((a) => /^\d+$/.test(a.actor)))}`);
      assert(actors.some((a) => a.action === 'ledger.grant' && a.actor === ADMIN.username), 'the grant shows the admin by name');
      await shot(ap, '21-admin-audit');
    } finally { await actx.close(); }
  });

  await test('submit_a_job_and_see_its_logs_status_and_artifact', async () => {
    const csrf = await page.evaluate(async () => (await (await fetch('/api/v1/me')).json()).csrf_token);
    await page.evaluate(async ({ id, csrf }) => {
      const code = 'import os\nprint("hello from a job")\nopen(os.path.join(os.environ.get("EDDY_OUTPUT_DIR", "."), "result.txt"), "w").write("42\\n")\n';
      const r = await fetch(`/api/v1/projects/${encodeURIComponent(id)}/files/train.py`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: code });
      if (!r.ok) throw new Error(`PUT ${r.status}`);
    }, { id: state.projectId, csrf });
    await page.goto(`${base}/jobs`);
    await page.waitForSelector('h1:has-text("Jobs")');
    assert(!(await page.$('[data-testid=unavailable]')), 'the jobs page says jobs are unavailable: GET /api/v1/jobs answers 404');
    await page.selectOption('select[aria-label=Project]', state.projectId);
    await page.fill('input[aria-label="Entry file"]', 'train.py');
    await shot(page, '11-jobs');
    await page.click('text=Submit job');
    await page.waitForURL(/\/jobs\/\d+$/);
    await page.waitForSelector('[data-testid=logs]:has-text("hello from a job")', { timeout: 30000 });
    await page.waitForSelector('.badge:has-text("succeeded")', { timeout: 30000 });
    await page.waitForSelector('td:has-text("result.txt")', { timeout: 10000 });
    await shot(page, '12-job');
    state.jobUrl = page.url();
  });

  await test('copy_job_artifacts_to_a_project', async () => {
    assert(state.jobUrl, 'the job test ran a job');
    const jobId = state.jobUrl.split('/').pop();
    await page.goto(state.jobUrl);
    await page.waitForSelector('[data-testid=copy-artifacts]');
    await page.selectOption('[data-testid=copy-project]', state.projectId);
    await page.fill('[data-testid=copy-dest]', 'from-job');
    const [resp] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && /\/artifacts\/copy$/.test(r.url())),
      page.click('[data-testid=copy-artifacts]'),
    ]);
    // A 404 "no route for" here is also counted by no_route_the_pages_used_answered_404.
    assert(resp.status() === 201, `POST /api/v1/jobs/${jobId}/artifacts/copy answered ${resp.status()}: ${await resp.text()}`);
    await page.waitForSelector('[data-testid=copied]:has-text("result.txt")');
    await shot(page, '12b-job-copied');
    const f = await rest(page, 'GET', fileUrl(state.projectId, 'from-job/result.txt'));
    assert(f.status === 200 && f.body === '42\n', `from-job/result.txt: ${f.status} ${f.body}`);
    // The same copy again is refused (the files exist), and the page says so in place.
    await page.click('[data-testid=copy-artifacts]');
    const err = await (await page.waitForSelector('[data-testid=copy-result] .error-box')).textContent();
    assert(/Not copied/.test(err), `error shown: ${err}`);
    // A full workspace (402) says so plainly. The server's own 402 needs a
    // full quota tree, so this one answer is stubbed in the browser.
    const copyRe = /\/api\/v1\/jobs\/[^/]+\/artifacts\/copy$/;
    await page.route(copyRe, (rt) => rt.fulfill({ status: 402, contentType: 'application/json',
      body: JSON.stringify({ error: { code: 'quota_exceeded', message: 'the workspace of first-project is full (2 GiB)', request_id: 'e2e' } }) }));
    try {
      await page.click('[data-testid=copy-artifacts]');
      const full = await (await page.waitForSelector('[data-testid=copy-result] .error-box:has-text("no room")')).textContent();
      assert(/workspace of first-project is full/.test(full), `402 shown: ${full}`);
    } finally { await page.unroute(copyRe); }
    // The project's file view has them.
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files] tr[data-path="from-job/result.txt"]');
  });

  const kernels = await page.request.get(`${base}/api/v1/kernels`);
  // Kernels are part of the server: their route answering 404 fails the tests that use them.
  const noKernels = kernels.status() === 404 ? 'GET /api/v1/kernels answers 404: the server lacks kernels' : null;

  await test('print_and_matplotlib_cells_show_text_and_image', async () => {
    assert(!noKernels, noKernels);
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('print("hello from eddy")');
    await page.keyboard.press('Shift+Enter');
    await page.waitForSelector('.outputs pre.stream:has-text("hello from eddy")', { timeout: 60000 });
    // Shift-Enter selected the next (markdown) cell in command mode, as in
    // Jupyter: A inserts a code cell above it, Enter edits it.
    assert((await page.textContent('[data-testid=mode]')) === 'command', 'Shift-Enter on a cell with one below leaves command mode');
    await page.keyboard.press('a');
    await page.keyboard.press('Enter');
    await page.keyboard.type('import matplotlib\nmatplotlib.use("agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()');
    await page.keyboard.press('Shift+Enter');
    await page.waitForSelector('.outputs img.out.image', { timeout: 60000 });
    // the figure decodes to a real PNG (matplotlib's default is 640x480)
    await page.waitForFunction(() => [...document.querySelectorAll('.outputs img.out.image')].some((i) => i.complete && i.naturalWidth > 100));
    const cells = await page.$$eval('.cell', (els) => els.map((e) => e.dataset.type));
    assert(cells[0] === 'code' && cells[1] === 'code', `the plot went into a new code cell below: ${cells}`);
    assert(await page.isVisible('.cell >> nth=0 >> .outputs pre.stream:has-text("hello from eddy")'), 'the print output stays');
    await shot(page, '13-notebook-outputs');
  });

  await test('reload_while_printing_keeps_every_line', async () => {
    assert(!noKernels, noKernels);
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('import time\nfor i in range(30):\n    print("line", i, flush=True)\n    time.sleep(0.1)');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('.outputs pre.stream:has-text("line 5")', { timeout: 60000 });
    await page.reload();
    await page.waitForSelector('.outputs pre.stream:has-text("line 29")', { timeout: 60000 });
    const text = await page.textContent('.cell .outputs pre.stream');
    for (let i = 0; i < 30; i++) assert(text.includes(`line ${i}\n`), `line ${i} missing after reload`);
    assert(text.split('line 0\n').length === 2, 'no line repeated');
  });

  await test('large_output_20000_lines_all_shown_200000_collapse_with_show_all_and_download', async () => {
    assert(!noKernels, noKernels);
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    const run = async (code) => {
      await page.click('.cell .cm-content');
      await page.keyboard.press('Control+a');
      await page.keyboard.type(code);
      await page.keyboard.press('Control+Enter');
    };
    // The first cell's stream output ends with `last`.
    const endsWith = (last) => page.waitForFunction((w) => {
      const pre = document.querySelector('.cell .outputs pre.stream');
      return !!pre && pre.textContent.endsWith(w);
    }, last, { timeout: 120000 });
    // The page's autosave and the kernel's output fold both write the file;
    // when they meet the page may reload (and replay the journal): wait
    // until the page has saved, then for the output again.
    const settled = async (last) => {
      await endsWith(last);
      await page.waitForFunction(() => /^Saved/.test(document.querySelector('[data-testid=save-status]')?.textContent || ''), null, { timeout: 60000 });
      await endsWith(last);
    };
    await run('for i in range(20000): print(i)');
    await settled('19999\n');
    let text = await page.textContent('.cell .outputs pre.stream');
    assert(text.startsWith('0\n1\n2\n') && text.split('\n').length === 20001, `20,000 lines all in the page (${text.split('\n').length - 1})`);
    assert(!(await page.isVisible('.cell >> nth=0 >> [data-testid=output-hidden]')), 'nothing hidden at 20,000 lines');
    // 200,000 lines: the page keeps the tail and says how many are hidden.
    await run('for i in range(200000): print(i)');
    await settled('199999\n');
    await page.waitForSelector('.cell >> nth=0 >> [data-testid=output-hidden]:visible');
    const bar = await page.textContent('.cell >> nth=0 >> [data-testid=output-hidden]');
    assert(/[\d,.\s]+ lines hidden/.test(bar), `the bar says what is hidden: ${bar}`);
    text = await page.textContent('.cell .outputs pre.stream');
    const shown = text.split('\n').length - 1;
    assert(shown < 200000 && !text.startsWith('0\n'), `only the tail is in the page (${shown} lines)`);
    await shot(page, '25-large-output-collapsed');
    // download: every line
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('.cell >> nth=0 >> [data-testid=output-download]')]);
    const { readFileSync } = await import('node:fs');
    const got = readFileSync(await dl.path(), 'utf8');
    assert(got.startsWith('0\n1\n') && got.endsWith('199999\n') && got.split('\n').length === 200001, `the download has all 200,000 lines (${got.split('\n').length - 1})`);
    // show all: every line in the page, the bar gone (pressed again should
    // the page have reloaded meanwhile, see settled above)
    let all = false;
    for (let tries = 0; tries < 3 && !all; tries++) {
      await settled('199999\n');
      await page.waitForSelector('.cell >> nth=0 >> [data-testid=output-show-all]:visible', { timeout: 60000 });
      await page.click('.cell >> nth=0 >> [data-testid=output-show-all]');
      all = await page.waitForFunction(() => {
        const t = document.querySelector('.cell .outputs pre.stream')?.textContent || '';
        return t.startsWith('0\n1\n') && t.endsWith('199999\n') && t.split('\n').length === 200001 &&
          document.querySelector('.cell [data-testid=output-hidden]')?.hidden;
      }, null, { timeout: 20000 }).then(() => true, () => false);
    }
    assert(all, 'show all shows all 200,000 lines and hides the bar');
    // leave the notebook small for the tests after this one
    await run('print("small again")');
    await page.waitForSelector('.cell >> nth=0 >> .outputs pre.stream:has-text("small again")', { timeout: 60000 });
  });

  await test('kernel_stopped_elsewhere_shows_dead_and_the_next_run_starts_a_new_one', async () => {
    assert(!noKernels, noKernels);
    await page.goto(state.notebookUrl);
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    // Stop the page's kernel through the API, as another tab or the CLI would.
    const old = await page.evaluate(async () => {
      const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
      const live = (await (await fetch('/api/v1/kernels')).json()).items.filter((k) => k.status !== 'dead');
      for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
      return live.map((k) => k.id);
    });
    assert(old.length === 1, `one live kernel before: ${old}`);
    // The event stream's `event: end` tells the page, with the reason.
    await page.waitForSelector('[data-testid=kernel-status][data-status=dead]:has-text("shutdown")', { timeout: 30000 });
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('print("from a new kernel")');
    await page.keyboard.press('Control+Enter');
    // The new kernel's journal starts again at seq 1: its output must show.
    await page.waitForSelector('.cell >> nth=0 >> .outputs pre.stream:has-text("from a new kernel")', { timeout: 60000 });
    const now = await fetchJson(page, '/api/v1/kernels');
    const live = JSON.parse(now.body).items.filter((k) => k.status !== 'dead').map((k) => k.id);
    assert(live.length === 1 && live[0] !== old[0], `a new kernel runs: ${live} (old ${old})`);
    await shot(page, '14-notebook-new-kernel');
  });

  await test('a_page_on_another_port_cannot_drive_the_users_kernel_with_her_cookie', async () => {
    assert(!noKernels, noKernels);
    // The user's live kernel (the notebook's), and the project it works in.
    await page.goto(state.notebookUrl);
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    const live = JSON.parse((await fetchJson(page, '/api/v1/kernels')).body).items.filter((k) => k.status !== 'dead');
    assert(live.length === 1, `one live kernel: ${JSON.stringify(live)}`);
    const kid = live[0].id;
    const tag = `x${Date.now()}`;
    // Prints "ran-<tag>-<who>": the output differs from the code's text, so the
    // journal shows whether the code ran, not only whether it arrived.
    const code = (who) => `print("ran-" + "${tag}-${who}")`;
    // Sends one execute_request over the kernel's channels once open; resolves
    // with what happened (runs in a page, own or foreign).
    const drive = async ({ url, source }) => new Promise((resolve) => {
      let opened = false;
      const ws = new WebSocket(url);
      const done = (r) => { try { ws.close(); } catch { /* closed */ } resolve(r); };
      const msgId = `e2e-${Math.random().toString(36).slice(2)}`;
      ws.onopen = () => {
        opened = true;
        ws.send(JSON.stringify({ channel: 'shell', header: { msg_id: msgId, msg_type: 'execute_request', username: 'e2e', session: msgId, date: new Date().toISOString(), version: '5.3' },
          parent_header: {}, metadata: {}, content: { code: source, silent: false, store_history: false, user_expressions: {}, allow_stdin: false, stop_on_error: true } }));
      };
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        if (m.msg_type === 'execute_reply' && m.parent_header && m.parent_header.msg_id === msgId) done(`replied:${m.content.status}`);
      };
      ws.onerror = () => { if (!opened) done('refused'); };
      ws.onclose = (ev) => done(opened ? `closed:${ev.code}` : 'refused');
      setTimeout(() => done(opened ? 'open-no-reply' : 'timeout'), 30000);
    });
    // The attacker's page: another port of the same host, served by a tiny server.
    const evil = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>evil</title><script>window.drive = ${drive.toString()};</script>`);
    });
    await new Promise((r) => evil.listen(0, '127.0.0.1', r));
    const evilBase = `http://127.0.0.1:${evil.address().port}`;
    const wsUrl = `${base.replace(/^http/, 'ws')}/api/kernels/${encodeURIComponent(kid)}/channels`;
    const ep = await ctx.newPage();   // same browser, same cookie jar: the user's session cookie goes along
    try {
      await ep.goto(`${evilBase}/`);
      const got = await ep.evaluate((a) => window.drive(a), { url: wsUrl, source: code('foreign') });
      assert(got === 'refused', `the foreign page's WebSocket: ${got}`);
    } finally {
      await ep.close();
      evil.close();
    }
    // The app's own page still drives its kernel over the same route...
    const own = await page.evaluate(drive, { url: wsUrl, source: code('own') });
    assert(own === 'replied:ok', `the app's own WebSocket: ${own}`);
    // ...and the kernel's journal (its REST event stream, replayed from the
    // start) shows the own code's output and no trace of the foreign code.
    const journal = await page.evaluate(async ({ id, tag }) => {
      const ctl = new AbortController();
      const r = await fetch(`/api/v1/kernels/${encodeURIComponent(id)}/events?after=0`, { signal: ctl.signal });
      const rd = r.body.getReader();
      let text = '';
      const stop = setTimeout(() => ctl.abort(), 5000);
      try { for (;;) { const { value, done } = await rd.read(); if (done) break; text += new TextDecoder().decode(value); if (text.includes(`ran-${tag}-own`)) break; } } catch { /* aborted */ }
      clearTimeout(stop);
      ctl.abort();
      return text;
    }, { id: kid, tag });
    assert(journal.includes(`ran-${tag}-own`), 'the journal shows the own code ran (the check can see a run)');
    assert(!journal.includes(`${tag}-foreign`), 'the journal has no trace of the foreign code');
  });

  await test('a_file_a_kernel_writes_shows_in_the_file_view', async () => {
    assert(!noKernels, noKernels);
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files]');
    // The project's live kernel (the notebook tests leave one), else a new one.
    let k = JSON.parse((await fetchJson(page, '/api/v1/kernels')).body).items.find((x) => x.status !== 'dead' && String(x.project_id) === String(state.projectId));
    if (!k) {
      const r = await rest(page, 'POST', '/api/v1/kernels', { project_id: state.projectId, resource: 'cpu-basic' });
      assert(r.status === 201, `POST kernel ${r.status}: ${r.body}`);
      k = JSON.parse(r.body);
    }
    for (let i = 0; i < 120 && !['idle', 'busy'].includes(k.status); i++) {
      await page.waitForTimeout(500);
      k = JSON.parse((await fetchJson(page, `/api/v1/kernels/${encodeURIComponent(k.id)}`)).body);
      assert(k.status !== 'dead', `the kernel died: ${k.stop_reason}`);
    }
    const name = `kernel-made-${Date.now()}.txt`;
    const ex = await rest(page, 'POST', `/api/v1/kernels/${encodeURIComponent(k.id)}/execute`,
      { code: `open("/home/aistudio/work/${name}", "w").write("from the kernel\\n")` });
    assert(ex.status === 202, `execute ${ex.status}: ${ex.body}`);
    // When the REST list has it (the server's side), the open page shows it within 1.5 s.
    let t0 = null;
    for (let i = 0; i < 100 && t0 === null; i++) {
      const l = JSON.parse((await fetchJson(page, `/api/v1/projects/${encodeURIComponent(state.projectId)}/files`)).body);
      if (l.items.some((f) => f.path === name)) t0 = Date.now();
      else await page.waitForTimeout(100);
    }
    assert(t0 !== null, `${name}, written by the kernel in /home/aistudio/work, never appeared in GET .../files (the kernel's work directory is not the project's tree)`);
    await page.waitForSelector(`[data-testid=files] tr[data-path="${name}"]`, { timeout: 1500 });
    console.log(`e2e: a kernel-written file showed in the file view ${Date.now() - t0} ms after the REST list had it`);
    const f = await rest(page, 'GET', fileUrl(state.projectId, name));
    assert(f.body === 'from the kernel\n', `content: ${JSON.stringify(f.body)}`);
    state.kernelId = k.id;
    await shot(page, '15-kernel-file');
  });

  await test('a_symlink_a_kernel_makes_is_never_followed_by_the_web_app', async () => {
    assert(!noKernels, noKernels);
    assert(state.kernelId, 'the kernel-file test left a kernel');
    const ex = await rest(page, 'POST', `/api/v1/kernels/${encodeURIComponent(state.kernelId)}/execute`,
      { code: 'import os\nfor n, t in (("leak-shadow", "/etc/shadow"), ("leak-passwd", "/etc/passwd")):\n    p = "/home/aistudio/work/" + n\n    os.path.lexists(p) or os.symlink(t, p)\nopen("/home/aistudio/work/links-made.txt", "w").write("ok")' });
    assert(ex.status === 202, `execute ${ex.status}: ${ex.body}`);
    let made = false;
    for (let i = 0; i < 100 && !made; i++) {
      made = (await rest(page, 'GET', fileUrl(state.projectId, 'links-made.txt'))).status === 200;
      if (!made) await page.waitForTimeout(100);
    }
    assert(made, 'the kernel made its links (links-made.txt)');
    for (const n of ['leak-shadow', 'leak-passwd']) {
      const r = await rest(page, 'GET', fileUrl(state.projectId, n));
      console.log(`e2e: GET ${n} (a link the kernel made) answered ${r.status}`);
      assert(r.status !== 200 && !/root:/.test(r.body), `GET ${n} through the API: ${r.status} ${r.body.slice(0, 80)}`);
      await page.goto(`${state.projectUrl}/edit/${n}`);
      await page.waitForSelector('textarea.editor, .error-box');
      const shown = (await page.$('textarea.editor')) ? await page.inputValue('textarea.editor') : '';
      assert(!/root:/.test(shown) && !/root:x?:/.test(await page.content()), `the editor showed ${n}'s target`);
    }
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=files] tr[data-path="links-made.txt"]');
    assert(!/root:x?:/.test(await page.content()), 'the file view shows no target contents');
  });

  await test('editing_while_a_cell_streams_loses_no_edit_and_no_output', async () => {
    assert(!noKernels, noKernels);
    // The kernel's output fold writes the running cell's outputs into the file
    // while the page autosaves its edits to another cell: both must survive.
    const url = fileUrl(state.projectId, 'stream.ipynb');
    // 8 s of output: the page autosaves during it (at the latest 5 s after a
    // change) and meets the fold's writes (at most one a second) as a 412.
    const code = 'import time\nfor i in range(80):\n    print("line", i, flush=True)\n    time.sleep(0.1)';
    const nb0 = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [
      { cell_type: 'code', id: 's1', metadata: {}, source: code, outputs: [], execution_count: null },
      { cell_type: 'code', id: 's2', metadata: {}, source: 'x = 0', outputs: [], execution_count: null }] };
    const r = await rest(page, 'PUT', url, JSON.stringify(nb0));
    assert(r.status === 200 || r.status === 201, `PUT ${r.status}`);
    // A tier may run one kernel: stop the others so this page can start its own.
    await page.evaluate(async () => {
      const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
      const live = (await (await fetch('/api/v1/kernels')).json()).items.filter((k) => k.status !== 'dead');
      for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
    });
    let stale = 0;
    const on412 = (q) => { if (q.status() === 412 && q.url().endsWith('/stream.ipynb')) stale++; };
    page.on('response', on412);
    await page.goto(`${state.projectUrl}/notebook/stream.ipynb`);
    await page.waitForSelector('.cell[data-cell-id=s2] .cm-content');
    await page.click('.cell[data-cell-id=s1] .cm-content');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('.cell[data-cell-id=s1] .outputs pre.stream:has-text("line 2"), .toast.error', { timeout: 60000 });
    assert(!(await page.$('.toast.error')), `running the cell failed: ${await page.textContent('.toast.error').catch(() => '')}`);
    await page.click('.cell[data-cell-id=s2] .cm-content');
    await page.keyboard.press('End');
    for (let i = 0; i < 4; i++) { await page.keyboard.type(' + 1'); await page.waitForTimeout(600); }
    await page.waitForSelector('.cell[data-cell-id=s1] .outputs pre.stream:has-text("line 79")', { timeout: 60000 });
    const want = Array.from({ length: 80 }, (_, i) => `line ${i}\n`).join('');
    let nb, s1, s2;
    for (let i = 0; i < 50; i++) {
      nb = JSON.parse((await rest(page, 'GET', url)).body);
      s1 = nb.cells.find((c) => c.id === 's1');
      s2 = nb.cells.find((c) => c.id === 's2');
      const text = s1 ? s1.outputs.filter((o) => o.output_type === 'stream').map((o) => [].concat(o.text).join('')).join('') : '';
      if (text === want && s2 && [].concat(s2.source).join('') === 'x = 0 + 1 + 1 + 1 + 1' &&
          (await page.textContent('[data-testid=save-status]')).startsWith('Saved ')) break;
      await page.waitForTimeout(200);
    }
    assert(nb.cells.map((c) => c.id).join() === 's1,s2', `cells: ${nb.cells.map((c) => c.id)}`);
    assert([].concat(s2.source).join('') === 'x = 0 + 1 + 1 + 1 + 1', `the edit made while streaming: ${JSON.stringify(s2.source)}`);
    const saved = s1.outputs.filter((o) => o.output_type === 'stream').map((o) => [].concat(o.text).join('')).join('');
    assert(saved === want, `the file's outputs of the streaming cell: ${JSON.stringify(saved)}`);
    const shown = await page.textContent('.cell[data-cell-id=s1] .outputs');
    assert(shown === want, `the page's outputs: ${JSON.stringify(shown)}`);
    assert(!(await page.$('[data-testid=stale-dialog]')), 'no dialog: the edits were to different cells');
    page.off('response', on412);
    console.log(`e2e: ${stale} autosave(s) met the fold's writes (412) and merged`);
    assert(stale >= 1, 'an autosave during the stream met a write of the fold (the merge ran)');
  });


  // ---- issue 14: the notebook IDE, round two ------------------------------------
  const liveKernels = async () => JSON.parse((await fetchJson(page, '/api/v1/kernels')).body).items.filter((k) => k.status !== 'dead');
  const stopAllKernels = () => page.evaluate(async () => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const live = (await (await fetch('/api/v1/kernels')).json()).items.filter((k) => k.status !== 'dead');
    for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
  });
  const prompt = (id) => page.textContent(`.cell[data-cell-id=${id}] .prompt`);

  await test('kernel_limit_offers_the_running_kernels_panel_where_one_is_stopped', async () => {
    assert(!noKernels, noKernels);
    // The free tier runs one kernel: one runs for another notebook (the
    // streaming test leaves it; else one is started through the API).
    if (!(await liveKernels()).length) {
      const r = await rest(page, 'POST', '/api/v1/kernels', { project_id: state.projectId, resource: 'cpu-basic' });
      assert(r.status === 201, `POST kernel ${r.status}: ${r.body}`);
    }
    const other = (await liveKernels())[0];
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('print("after the panel")');
    await page.keyboard.press('Control+Enter');
    // The refusal offers the panel, which lists that kernel and stops it.
    await page.waitForSelector('[data-testid=kernel-limit-dialog]', { timeout: 30000 });
    assert(/allows 1 running kernel/.test(await page.textContent('[data-testid=kernel-limit-dialog]')), 'the dialog says why');
    await page.click('[data-testid=kernel-limit-open]');
    const row = `[data-testid=kernels-dialog] tr[data-kernel-id="${other.id}"]`;
    await page.waitForSelector(row);
    const text = await page.textContent(row);
    assert(text.includes(other.resource) && /first-project/.test(text) && /(idle|busy)/.test(text), `the row: ${text}`);
    assert(/free/.test(text), `cpu-basic is never charged on the free tier: its cost says free: ${text}`);
    await shot(page, '16-kernels-panel');
    await page.click(`${row} [data-testid=kernel-stop]`);
    await page.waitForSelector('[data-testid=kernels-dialog] [data-testid=kernels-none]');
    await page.click('[data-testid=kernels-dialog] button:has-text("Close")');
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('.cell >> nth=0 >> .outputs pre.stream:has-text("after the panel")', { timeout: 60000 });
    // The panel on the project page and the account page lists the notebook's kernel.
    const mine = (await liveKernels()).map((k) => k.id);
    assert(mine.length === 1 && mine[0] !== other.id, `the notebook's kernel runs: ${mine}`);
    await page.goto(state.projectUrl);
    await page.waitForSelector(`[data-testid=kernels-panel] tr[data-kernel-id="${mine[0]}"]`);
    await page.goto(`${base}/account`);
    await page.waitForSelector(`[data-testid=kernels-panel] tr[data-kernel-id="${mine[0]}"]`);
    await shot(page, '17-account-kernels');
  });

  // The admin adds two CPU classes: one every tier may use (to switch a
  // running kernel to), one only the pro tier may use (the free user sees it
  // disabled, with the reason).
  async function adminResources() {
    if (state.adminResources) return;
    const actx = await browser.newContext();
    try {
      const ap = await actx.newPage();
      await ap.goto(`${base}/login`);
      const put = await ap.evaluate(async (a) => {
        const l = await fetch('/api/v1/auth/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(a) });
        const { csrf_token: csrf } = await l.json();
        const out = [];
        for (const [name, tiers] of [['cpu-small', ['free', 'pro', 'premium']], ['cpu-pro-only', ['pro', 'premium']]]) {
          const r = await fetch(`/api/v1/admin/resources/${name}`, { method: 'PUT', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
            body: JSON.stringify({ cpus: 1, memory_mb: 1024, gpus: 0, price_mcoins_per_hour: 500, capacity: 2, tiers }) });
          out.push(`${r.status} ${await r.text()}`);
        }
        return out;
      }, ADMIN);
      assert(put.every((x) => /^20\d/.test(x)), `PUT the classes: ${put}`);
      state.adminResources = true;
    } finally { await actx.close(); }
  }

  await test('changing_the_resource_while_a_kernel_runs_asks_then_restarts_or_reverts', async () => {
    assert(!noKernels, noKernels);
    await adminResources();
    await stopAllKernels();
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(state.notebookUrl);
    const picker = 'select[aria-label="Resource for the kernel"]';
    await page.waitForSelector(`${picker} option[value=cpu-small]`, { state: 'attached' });
    await page.selectOption(picker, 'cpu-basic');
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    // Cancel: the picker goes back to the kernel's class.
    await page.selectOption(picker, 'cpu-small');
    await page.waitForSelector('[data-testid=resource-change-dialog]');
    await page.click('[data-testid=resource-change-dialog] button:has-text("Cancel")');
    assert((await page.inputValue(picker)) === 'cpu-basic', 'cancel puts the picker back');
    // Restart on the new class: the old kernel stops, a new one runs there.
    const old = (await liveKernels()).map((k) => k.id);
    await page.selectOption(picker, 'cpu-small');
    await page.click('[data-testid=resource-switch]');
    await page.waitForSelector('.toast:has-text("Kernel started on cpu-small")', { timeout: 30000 });
    let live = [];
    for (let i = 0; i < 100; i++) {
      live = await liveKernels();
      if (live.length === 1 && !old.includes(live[0].id)) break;
      await page.waitForTimeout(200);
    }
    assert(live.length === 1 && live[0].resource === 'cpu-small' && !old.includes(live[0].id), `kernels now: ${JSON.stringify(live)}`);
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    await stopAllKernels();
  });

  await test('resource_picker_offers_only_classes_the_user_can_run_and_labels_say_what_they_mean', async () => {
    await adminResources();
    const res = JSON.parse((await fetchJson(page, '/api/v1/resources')).body);
    const items = res.items || res;
    await page.goto(state.notebookUrl);
    const picker = 'select[aria-label="Resource for the kernel"]';
    await page.waitForSelector(picker);
    const opts = await page.$$eval(`${picker} option`, (os) => os.map((o) => ({ v: o.value, d: o.disabled, t: o.textContent })));
    for (const r of items) {
      const o = opts.find((x) => x.v === r.name);
      if (r.gpus && !r.capacity) assert(!o, `${r.name}: a GPU class this host has none of is offered: ${JSON.stringify(o)}`);
      else if (r.tiers && r.tiers.length && !r.tiers.includes('free')) assert(o && o.d && /not in the free tier/.test(o.t), `${r.name} (tiers ${r.tiers}) is not disabled with the reason: ${JSON.stringify(o)}`);
      else assert(o && !o.d, `${r.name} is usable and offered: ${JSON.stringify(o)}`);
    }
    const pro = opts.find((o) => o.v === 'cpu-pro-only');
    assert(pro && pro.d && /not in the free tier/.test(pro.t), `the pro-only class: ${JSON.stringify(pro)}`);
    const cpu = opts.find((o) => o.v === 'cpu-basic');
    assert(cpu && /free/.test(cpu.t) && !/\/h/.test(cpu.t), `cpu-basic is never charged on the free tier, so shows no price: ${cpu && cpu.t}`);
    assert(!opts.some((o) => /\b1 CPUs\b/.test(o.t)), 'no "1 CPUs"');
    await page.goto(`${base}/account`);
    await page.waitForSelector('[data-testid=free-time]');
    const q = await page.textContent('[data-testid=quota]');
    assert(/Free GPU time left today/.test(q), `the free time says it is GPU time: ${q}`);
    assert(!/unlimited/i.test(await page.textContent('[data-testid=time-remaining]')), 'no "time remaining: unlimited"');
    assert(!/\b1 kernels\b|\b1 GPUs\b/.test(q) && /1 running kernel,/.test(q), `plurals: ${q}`);
    await shot(page, '18-account-labels');
  });

  await test('a_running_cell_shows_star_and_run_all_stops_at_an_error', async () => {
    assert(!noKernels, noKernels);
    const url = fileUrl(state.projectId, 'runall.ipynb');
    const cell = (id, source) => ({ cell_type: 'code', id, metadata: {}, source, outputs: [], execution_count: null });
    const nb = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [
      cell('r1', 'import time\nprint("started", flush=True)\ntime.sleep(2)\nprint("one")'),
      cell('r2', 'raise ValueError("boom")'), cell('r3', 'print("three")'), cell('r4', 'print("marker")')] };
    const r = await rest(page, 'PUT', url, JSON.stringify(nb));
    assert(r.status === 200 || r.status === 201, `PUT ${r.status}`);
    await stopAllKernels();
    await page.goto(`${state.projectUrl}/notebook/runall.ipynb`);
    await page.waitForSelector('.cell[data-cell-id=r4] .cm-content');
    await page.click('[data-testid=run-all]');
    // While r1 runs (its execute_input has come: it printed) the prompt is [*].
    await page.waitForSelector('.cell[data-cell-id=r1] .outputs pre.stream:has-text("started")', { timeout: 60000 });
    const bad = [];   // every check runs, so each bug shows on its own
    const check = (ok, msg) => { if (!ok) bad.push(msg); };
    check((await prompt('r1')) === '[*]', `a running cell's prompt: ${await prompt('r1')}`);
    await page.waitForSelector('.cell[data-cell-id=r2] .outputs pre.error:has-text("boom")', { timeout: 30000 });
    await page.waitForSelector('[data-testid=run-all]:not([disabled])');
    assert(/^\[\d+\]$/.test(await prompt('r1')) && /^\[\d+\]$/.test(await prompt('r2')), `prompts after: ${await prompt('r1')} ${await prompt('r2')}`);
    // The kernel runs in order: when a cell run after Run all prints, r3 would have too.
    await page.click('.cell[data-cell-id=r4] .cm-content');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('.cell[data-cell-id=r4] .outputs pre.stream:has-text("marker")', { timeout: 30000 });
    check(!(await page.textContent('.cell[data-cell-id=r3] .outputs')).includes('three'), 'Run all went on past the cell that raised');
    check((await prompt('r3')) === '[ ]', `r3 never ran: ${await prompt('r3')}`);
    await shot(page, '19-run-all-stopped');
    assert(!bad.length, bad.join('; '));
  });

  await test('keyboard_works_after_toolbar_buttons_and_a_prompt_click', async () => {
    const bad = [];
    const check = (ok, msg) => { if (!ok) bad.push(msg); };
    // After Save (edit mode) typing goes on into the editor.
    await page.goto(`${state.projectUrl}/notebook/runall.ipynb`);
    await page.waitForSelector('.cell[data-cell-id=r4] .cm-content');
    await page.click('.cell[data-cell-id=r4] .cm-content');
    await page.keyboard.press('End');
    await page.click('[data-testid=save]');
    await page.keyboard.type('  # kept');
    check((await page.textContent('.cell[data-cell-id=r4] .cm-content')).includes('# kept'), 'typing after Save reaches the editor');
    check((await page.textContent('[data-testid=mode]')) === 'edit', 'still edit mode');
    // Esc after a toolbar button: command mode, and B inserts a cell below.
    await page.click('[data-testid=interrupt]');
    await page.keyboard.press('Escape');
    check((await page.textContent('[data-testid=mode]')) === 'command', 'Esc after Interrupt: command mode');
    await page.click('[data-testid=run]');
    let n = await page.$$eval('.cell', (c) => c.length);
    await page.keyboard.press('Escape');
    await page.keyboard.press('b');
    check((await page.$$eval('.cell', (c) => c.length)) === n + 1, 'B after Run inserted a cell');
    // A click on the prompt of the cell being edited: command mode; A works.
    await page.click('.cell[data-cell-id=r1] .cm-content');
    check((await page.textContent('[data-testid=mode]')) === 'edit', 'editing r1');
    await page.click('.cell[data-cell-id=r1] .prompt');
    check((await page.textContent('[data-testid=mode]')) === 'command', 'a prompt click is command mode');
    n = await page.$$eval('.cell', (c) => c.length);
    await page.keyboard.press('a');
    check((await page.$$eval('.cell', (c) => c.length)) === n + 1, 'A after a prompt click inserted a cell');
    // Python indents by 4 spaces.
    await page.keyboard.press('Enter');
    await page.keyboard.type('for i in range(2):\n');
    await page.keyboard.type('x');
    const lines = await page.$$eval('.cell.selected .cm-line', (ls) => ls.map((l) => l.textContent));
    check(lines[1] === '    x', `auto-indent: ${JSON.stringify(lines)}`);
    assert(!bad.length, bad.join('; '));
  });

  await test('input_in_a_cell_asks_under_the_cell', async () => {
    assert(!noKernels, noKernels);
    await page.goto(`${state.projectUrl}/notebook/runall.ipynb`);
    await page.waitForSelector('.cell[data-cell-id=r4] .cm-content');
    await page.click('.cell[data-cell-id=r4] .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('name = input("Your name? ")\nprint("hello", name)');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('.cell[data-cell-id=r4] [data-testid=stdin]', { timeout: 60000 });
    await page.fill('.cell[data-cell-id=r4] [data-testid=stdin]', 'Ada');
    await page.press('.cell[data-cell-id=r4] [data-testid=stdin]', 'Enter');
    await page.waitForSelector('.cell[data-cell-id=r4] .outputs pre.stream:has-text("hello Ada")', { timeout: 30000 });
    assert(!(await page.$('.cell[data-cell-id=r4] .outputs pre.error')), `input() raised: ${await page.textContent('.cell[data-cell-id=r4] .outputs')}`);
    await shot(page, '23-input');
  });

  await test('restart_never_shows_queued_position_0', async () => {
    assert(!noKernels, noKernels);
    await page.goto(`${state.projectUrl}/notebook/runall.ipynb`);
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    await page.evaluate(() => {
      window.__kstates = [];
      const el = document.querySelector('[data-testid=kernel-status]');
      new MutationObserver(() => window.__kstates.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.click('[data-testid=restart]');
    await page.waitForSelector('.toast:has-text("Kernel restarted")');
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    const seen = await page.evaluate(() => window.__kstates);
    assert(!seen.some((t) => /position 0|queued/.test(t)), `kernel states shown: ${JSON.stringify(seen)}`);
  });

  await test('jobs_list_has_no_notebook_kernels', async () => {
    const jobs = JSON.parse((await fetchJson(page, '/api/v1/jobs?limit=500')).body).items;
    assert(jobs.some((j) => j.entry === '@kernel'), 'the API lists kernels as jobs (what the page must filter)');
    await page.goto(`${base}/jobs`);
    await page.waitForSelector('table');
    assert(!(await page.content()).includes('@kernel'), 'the Jobs list shows "@kernel" jobs');
  });

  await test('new_notebook_button_makes_a_unique_valid_notebook', async () => {
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=new-notebook]');
    await page.click('[data-testid=new-notebook]');
    await page.waitForURL('**/notebook/Untitled.ipynb');
    await page.waitForSelector('.cell .cm-content');
    await page.goto(state.projectUrl);
    await page.click('[data-testid=new-notebook]');
    await page.waitForURL('**/notebook/Untitled1.ipynb');
    const f = JSON.parse((await rest(page, 'GET', fileUrl(state.projectId, 'Untitled1.ipynb'))).body);
    assert(f.nbformat === 4 && Array.isArray(f.cells), 'a valid nbformat v4 notebook');
  });

  await test('a_second_project_of_the_same_name_is_refused_with_the_reason', async () => {
    // A second project of the same name: refused, and the page says why.
    await page.goto(`${base}/projects`);
    await page.fill('input[name=name]', 'First-Project');
    await page.click('button:has-text("Create project")');
    await page.waitForSelector('[data-testid=create-project-error] .error-box');
    const msg = await page.textContent('[data-testid=create-project-error]');
    assert(/already have a project named/.test(msg), `the error shown: ${msg}`);
    assert(new URL(page.url()).pathname === '/projects', 'stayed on the list');
    await shot(page, '20-duplicate-project');
  });

  await test('admin_kernels_table_lists_other_users_kernels', async () => {
    assert(!noKernels, noKernels);
    const live = await liveKernels();
    assert(live.length >= 1, 'the user has a live kernel (the restart test leaves one)');
    const actx = await browser.newContext({ viewport: { width: 1366, height: 820 } });
    try {
      const ap = await actx.newPage();
      ap.setDefaultTimeout(10000);
      await ap.goto(`${base}/login`);
      await ap.fill('input[name=username]', ADMIN.username);
      await ap.fill('input[name=password]', ADMIN.password);
      await ap.click('button[type=submit]');
      await ap.waitForURL('**/projects');
      await ap.goto(`${base}/admin`);
      await ap.waitForSelector('[data-testid=admin-kernels]');
      const rows = await ap.$$eval('[data-testid=admin-kernels] tbody tr', (rs) => rs.map((r) => r.dataset.project));
      assert(rows.includes(live[0].project_id), `the user's kernel (project ${live[0].project_id}) is not listed: ${rows}`);
      await shot(ap, '22-admin-kernels');
    } finally { await actx.close(); }
  });

  await test('notebook_diff_between_two_versions_per_cell_with_images_side_by_side', async () => {
    // Two versions of a notebook: cell c1's source and image output change
    // (one line of twelve), cell c2 is added, c3 is unchanged. Compare picks
    // both versions; the page shows one modified and one added cell, the
    // unchanged lines folded, both images side by side and no base64 text.
    const PNG_A = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const PNG_B = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
    const lines = Array.from({ length: 12 }, (_, i) => `a${i} = ${i}\n`);
    const nb = (src, png, extra) => JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [
      { id: 'c1', cell_type: 'code', metadata: {}, execution_count: 1, source: src,
        outputs: [{ output_type: 'display_data', metadata: {}, data: { 'image/png': png, 'text/plain': '<Figure>' } }] },
      ...(extra ? [{ id: 'c2', cell_type: 'code', metadata: {}, execution_count: null, source: 'y = 2', outputs: [] }] : []),
      { id: 'c3', cell_type: 'markdown', metadata: {}, source: '# the end' }] });
    const p = await rest(page, 'POST', '/api/v1/projects', { name: 'nbdiff-e2e', visibility: 'private' });
    assert(p.status === 201, `create project ${p.status}: ${p.body}`);
    const pid = JSON.parse(p.body).id;
    const v1src = lines.join(''), v2src = lines.map((l, i) => (i === 6 ? 'a6 = 600\n' : l)).join('');
    assert((await rest(page, 'PUT', fileUrl(pid, 'nb.ipynb'), nb(v1src, PNG_A, false))).status === 201, 'PUT v1');
    assert((await rest(page, 'POST', `/api/v1/projects/${pid}/versions`, { message: 'one' })).status === 201, 'version one');
    assert((await rest(page, 'PUT', fileUrl(pid, 'nb.ipynb'), nb(v2src, PNG_B, true))).status === 200, 'PUT v2');
    assert((await rest(page, 'POST', `/api/v1/projects/${pid}/versions`, { message: 'two' })).status === 201, 'version two');
    await page.goto(`${base}/projects/${encodeURIComponent(pid)}?tab=versions`);
    await page.waitForSelector('[data-testid=compare]');
    const chunks = [];
    const onResp = (r) => { if (/nbdiff.*\.js$/.test(r.url())) chunks.push(r.url()); };
    page.on('response', onResp);
    await page.click('[data-testid=compare]');
    await page.waitForSelector('[data-testid=nbdiff-summary]');
    page.off('response', onResp);
    assert(chunks.length === 1, `the diff code is loaded on demand: ${chunks}`);
    const statuses = await page.$$eval('[data-testid=nbdiff-cell]', (cs) => cs.map((c) => c.dataset.status));
    assert(JSON.stringify(statuses) === JSON.stringify(['modified', 'added', 'unchanged']), `cell statuses: ${statuses}`);
    const fold = await page.textContent('[data-status=modified] [data-testid=nbdiff-source]');
    assert(/⋯ 3 unchanged lines/.test(fold) && fold.includes('- a6 = 6') && fold.includes('+ a6 = 600') && !fold.includes('a0 = 0'), `source hunk: ${fold}`);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=nbdiff-images] img')].filter((i) => i.complete && i.naturalWidth > 0).length === 2);
    const [l, r] = await Promise.all(['nbdiff-img-from', 'nbdiff-img-to'].map((t) => page.$eval(`[data-testid=${t}]`, (e) => { const b = e.getBoundingClientRect(); return { x: b.x, y: b.y }; })));
    assert(r.x > l.x && Math.abs(r.y - l.y) < 5, `images side by side: ${JSON.stringify([l, r])}`);
    const text = await page.evaluate(() => document.body.innerText);
    assert(!text.includes('iVBORw0KGgo'), 'no base64 text on the page');
    await shot(page, '24-notebook-diff');
  });

  // The suites of later features, one module each in tests/e2e/cases/ (run
  // in name order, after the tests above, in the same browser and session):
  // each exports `run(t)` and gets the runner's helpers and shared state.
  const casesDir = join(here, 'cases');
  const t = { test, assert, shot, fetchJson, rest, fileUrl, needServer, page, ctx, browser, base, eddy, data, out,
    webDir, state, USER, ADMIN, consoleErrors };
  for (const f of existsSync(casesDir) ? readdirSync(casesDir).filter((n) => n.endsWith('.mjs')).sort() : []) {
    const mod = await import(join(casesDir, f));
    await mod.run(t);
  }

  await test('no_route_the_pages_used_answered_404', async () => {
    await Promise.all(pending404);
    assert(missingRoutes.length === 0, `routes missing on this server:\n${missingRoutes.join('\n')}`);
  });

  await test('no_console_errors_on_the_pages', async () => {
    // 404s are the probes for routes this server lacks; the sandbox refusing an
    // output's script (about:srcdoc) is the sandbox doing its job.
    const real = consoleErrors.filter((e) => !/status of 404|Failed to load resource/.test(e) &&
      !/^[^ ]*: Blocked script execution in 'about:srcdoc' because the document's frame is sandboxed/.test(e));
    assert(real.length === 0, real.join('\n'));
  });
  exitCode = results.some((r) => r.status === 'fail') ? 1 : 0;
} catch (e) {
  console.error(`e2e: ${e.stack || e}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  server.kill('SIGTERM');
  await new Promise((r) => { server.on('exit', r); setTimeout(r, 5000); });
  // The server removes its mounts as it exits; a directory still busy is
  // left behind with a warning rather than failing a passing run.
  try { rmSync(data, { recursive: true, force: true }); }
  catch (e) { console.error(`e2e: could not remove ${data}: ${e.code || e.message}`); }
}
const n = (s) => results.filter((r) => r.status === s).length;
console.log(`e2e: ${n('pass')} passed, ${n('fail')} failed, ${n('skip')} skipped; screenshots in ${out}`);
if (state.loadMs !== undefined) console.log(`e2e: notebook first load ${state.loadMs} ms`);
process.exit(exitCode);
