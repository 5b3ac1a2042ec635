// What the browser benchmarks share: a real `eddy serve` on a fresh data
// directory with one user, Debian's headless Chromium, signing in, and a
// project holding a notebook.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const top = resolve(here, '..', '..');
export const webDir = join(top, 'web');
export const args = Object.fromEntries(process.argv.slice(2).reduce((a, v, i, all) => (v.startsWith('--') ? [...a, [v.slice(2), all[i + 1]]] : a), []));
export const USER = { username: 'bench', password: 'bench-password-1' };

// Start eddy serve (--eddy, --web or EDDY_BIN, EDDY_WEB_DIR); resolves to
// {base, stop()}.
export async function startEddy() {
  const eddy = resolve(args.eddy || process.env.EDDY_BIN || join(top, 'build', 'ci', 'cmd', 'eddy'));
  const dist = resolve(args.web || process.env.EDDY_WEB_DIR || join(webDir, 'dist'));
  if (!existsSync(eddy)) throw new Error(`no eddy binary at ${eddy}`);
  const data = mkdtempSync(join(tmpdir(), 'eddy-bench-web-'));
  execFileSync(eddy, ['admin', 'create-user', '--data', data, '--username', USER.username, '--email', 'b@example.org',
    '--password', USER.password, '--role', 'user'], { stdio: 'pipe' });
  const server = spawn(eddy, ['serve', '--data', data, '--listen', '127.0.0.1:0'], { env: { ...process.env, EDDY_WEB_DIR: dist }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const base = await new Promise((res, rej) => {
    const on = (b) => { log += b; const m = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/); if (m) res(m[1]); };
    server.stdout.on('data', on); server.stderr.on('data', on);
    server.on('exit', (c) => rej(new Error(`eddy serve exited with ${c}:\n${log}`)));
    setTimeout(() => rej(new Error(`eddy serve did not start:\n${log}`)), 20000);
  });
  return {
    base,
    async stop() {
      server.kill('SIGTERM');
      await new Promise((r) => { server.on('exit', r); setTimeout(r, 5000); });
      try { rmSync(data, { recursive: true, force: true }); } catch { /* busy mount: left behind */ }
    },
  };
}

export async function launchBrowser() {
  const { chromium } = createRequire(join(webDir, 'package.json'))('playwright-core');
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export async function signIn(page, base) {
  await page.goto(`${base}/login`);
  await page.fill('input[name=username]', USER.username);
  await page.fill('input[name=password]', USER.password);
  await page.click('button[type=submit]');
  await page.waitForURL('**/projects');
}

// A new project named `name` holding `path` = the notebook `nb`; its id.
export async function makeNotebook(page, name, path, nb) {
  return page.evaluate(async ({ name, path, nb }) => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const h = { 'X-CSRF-Token': csrf, 'Content-Type': 'application/json' };
    const p = await (await fetch('/api/v1/projects', { method: 'POST', headers: h, body: JSON.stringify({ name, visibility: 'private' }) })).json();
    const r = await fetch(`/api/v1/projects/${encodeURIComponent(p.id)}/files/${path}`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: JSON.stringify(nb) });
    if (!r.ok) throw new Error(`PUT notebook: ${r.status} ${await r.text()}`);
    return p.id;
  }, { name, path, nb });
}

export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
