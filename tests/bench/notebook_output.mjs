// Large stream output in the notebook page: time from Shift+Enter on
// `for i in range(N): print(i)` to the last line visible, for N = 1,000 /
// 4,000 / 20,000 / 200,000, in Debian's headless Chromium against a real
// `eddy serve` (as tests/e2e/run.mjs). Also the longest main-thread stall
// seen meanwhile (a requestAnimationFrame gap: the page freezing shows here).
//
//   node tests/bench/notebook_output.mjs [--eddy build/ci/cmd/eddy] [--web web/dist] [--sizes 1000,4000,20000,200000]
//
// Targets (issue 14): 20,000 lines visible in under 2 s; 200,000 never freeze
// the page (longest stall well under a second; the output collapses).
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const top = resolve(here, '..', '..');
const webDir = join(top, 'web');
const args = Object.fromEntries(process.argv.slice(2).reduce((a, v, i, all) => (v.startsWith('--') ? [...a, [v.slice(2), all[i + 1]]] : a), []));
const eddy = resolve(args.eddy || process.env.EDDY_BIN || join(top, 'build', 'ci', 'cmd', 'eddy'));
const dist = resolve(args.web || process.env.EDDY_WEB_DIR || join(webDir, 'dist'));
const sizes = (args.sizes || '1000,4000,20000,200000').split(',').map(Number);
if (!existsSync(eddy)) { console.error(`bench: no eddy binary at ${eddy}`); process.exit(1); }
const { chromium } = createRequire(join(webDir, 'package.json'))('playwright-core');

const data = mkdtempSync(join(tmpdir(), 'eddy-bench-out-'));
const U = { username: 'bench', password: 'bench-password-1' };
execFileSync(eddy, ['admin', 'create-user', '--data', data, '--username', U.username, '--email', 'b@example.org',
  '--password', U.password, '--role', 'user'], { stdio: 'pipe' });
const server = spawn(eddy, ['serve', '--data', data, '--listen', '127.0.0.1:0'], { env: { ...process.env, EDDY_WEB_DIR: dist }, stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
const base = await new Promise((res, rej) => {
  const on = (b) => { log += b; const m = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/); if (m) res(m[1]); };
  server.stdout.on('data', on); server.stderr.on('data', on);
  server.on('exit', (c) => rej(new Error(`eddy serve exited with ${c}:\n${log}`)));
  setTimeout(() => rej(new Error(`eddy serve did not start:\n${log}`)), 20000);
});

let browser;
try {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const page = await (await browser.newContext({ viewport: { width: 1366, height: 820 } })).newPage();
  page.setDefaultTimeout(600000);
  page.on('dialog', (d) => d.accept());
  await page.goto(`${base}/login`);
  await page.fill('input[name=username]', U.username);
  await page.fill('input[name=password]', U.password);
  await page.click('button[type=submit]');
  await page.waitForURL('**/projects');
  const pid = await page.evaluate(async () => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const h = { 'X-CSRF-Token': csrf, 'Content-Type': 'application/json' };
    const p = await (await fetch('/api/v1/projects', { method: 'POST', headers: h, body: JSON.stringify({ name: 'bench-output', visibility: 'private' }) })).json();
    const nb = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [{ cell_type: 'code', id: 'c1', metadata: {}, source: 'print("warm")', outputs: [], execution_count: null }] };
    const r = await fetch(`/api/v1/projects/${encodeURIComponent(p.id)}/files/out.ipynb`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: JSON.stringify(nb) });
    if (!r.ok) throw new Error(`PUT notebook: ${r.status} ${await r.text()}`);
    return p.id;
  });
  await page.goto(`${base}/projects/${encodeURIComponent(pid)}/notebook/out.ipynb`);
  await page.waitForSelector('.cell .cm-content');
  // Warm the kernel (its start is not what is measured).
  await page.click('.cell .cm-content');
  await page.keyboard.press('Control+Enter');
  await page.waitForSelector('.outputs pre.stream:has-text("warm")', { timeout: 120000 });
  const rows = [];
  for (const n of sizes) {
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type(`for i in range(${n}): print(i)`);
    // A requestAnimationFrame loop records the longest gap between frames.
    await page.evaluate(() => {
      window.__gap = 0; window.__run = true; let last = performance.now();
      const f = (t) => { window.__gap = Math.max(window.__gap, t - last); last = t; if (window.__run) requestAnimationFrame(f); };
      requestAnimationFrame(f);
    });
    const t0 = Date.now();
    await page.keyboard.press('Control+Enter');
    const want = `${n - 1}\n`;
    // The last line is in the DOM (the tail of the first cell's stream output).
    await page.waitForFunction((w) => {
      const pre = [...document.querySelectorAll('.cell')][0]?.querySelector('.outputs pre.stream');
      if (!pre) return false;
      const t = pre.lastChild?.textContent ?? '';
      return t.endsWith(w) || pre.textContent.endsWith(w);
    }, want, { polling: 50, timeout: 600000 });
    const ms = Date.now() - t0;
    await page.waitForTimeout(300);
    const gap = await page.evaluate(() => { window.__run = false; return Math.round(window.__gap); });
    const collapsed = await page.$('.cell >> nth=0 >> [data-testid=output-hidden]:not([hidden])') !== null;
    rows.push({ lines: n, ms, gap, collapsed });
    console.log(`notebook_output lines=${n} all_visible_ms=${ms} longest_frame_gap_ms=${gap} collapsed=${collapsed}`);
  }
  console.table(rows);
} finally {
  if (browser) await browser.close().catch(() => {});
  server.kill('SIGTERM');
  await new Promise((r) => { server.on('exit', r); setTimeout(r, 5000); });
  try { rmSync(data, { recursive: true, force: true }); } catch { /* busy mount: left behind */ }
}
