// The notebook page against Jupyter Notebook 6 (Debian's python3-notebook),
// side by side on the same 30-cell notebook, in Debian's headless Chromium:
//   load:  navigation to the first cell's editor taking input (median of 5;
//          "cold" in a fresh browser profile, "warm" reloading with the cache)
//   first output: navigation, then Shift+Enter on `print(1)` as soon as the
//          editor takes input, until "1" shows: the kernel starts on the way
//          (Eddy starts it on the first run, Jupyter when the page opens);
//          median of 3, no kernel running before each.
// Prints the JavaScript the Eddy page loaded (gzipped bytes over the wire).
//
//   node tests/bench/notebook_page.mjs [--eddy build/ci/cmd/eddy] [--web web/dist] [--runs 5]
//
// Target (issue 14): the notebook editable in under 500 ms on a quiet machine.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { args, startEddy, launchBrowser, signIn, makeNotebook, median } from './web_bench.mjs';

const RUNS = Number(args.runs || 5);

// A tutorial-sized notebook: markdown, code and small outputs.
function notebook() {
  const cells = [{ cell_type: 'code', id: 'first', metadata: {}, source: 'print(1)', outputs: [], execution_count: null }];
  for (let i = 0; i < 29; i++) {
    cells.push(i % 3 === 0
      ? { cell_type: 'markdown', id: `m${i}`, metadata: {}, source: `## Step ${i}\nSome *text* about step ${i}, with \`code\`.` }
      : { cell_type: 'code', id: `c${i}`, metadata: {}, source: `x${i} = [j * j for j in range(${i + 10})]\nprint(sum(x${i}))`,
        outputs: [{ output_type: 'stream', name: 'stdout', text: `${i * 1000}\n` }], execution_count: i });
  }
  return { nbformat: 4, nbformat_minor: 5, metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } }, cells };
}

const freePort = () => new Promise((res) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });

async function startJupyter(nb) {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-bench-jupyter-'));
  writeFileSync(join(dir, 'bench.ipynb'), JSON.stringify(nb));
  const port = await freePort();
  const proc = spawn('/usr/bin/python3', ['-m', 'notebook', '--no-browser', '--allow-root', `--port=${port}`, '--ip=127.0.0.1',
    '--NotebookApp.token=', '--NotebookApp.password=', `--notebook-dir=${dir}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  await new Promise((res, rej) => {
    const on = (b) => { log += b; if (/Jupyter Notebook .* is running at|Use Control-C to stop/.test(log)) res(); };
    proc.stdout.on('data', on); proc.stderr.on('data', on);
    proc.on('exit', (c) => rej(new Error(`jupyter notebook exited with ${c}:\n${log}`)));
    setTimeout(() => rej(new Error(`jupyter notebook did not start:\n${log}`)), 30000);
  });
  return {
    base: `http://127.0.0.1:${port}`,
    dir,
    async stop() { proc.kill('SIGTERM'); await new Promise((r) => { proc.on('exit', r); setTimeout(r, 5000); }); rmSync(dir, { recursive: true, force: true }); },
  };
}

// ms from navigation start until ready() holds in the page.
async function navTime(page, url, ready) {
  await page.goto(url, { waitUntil: 'commit' });
  return page.waitForFunction(ready, null, { polling: 'raf', timeout: 60000 }).then(() => page.evaluate(() => performance.now()));
}

const peers = {
  eddy: {
    editable: () => !!document.querySelector('.cell .cm-content[contenteditable=true]'),
    editor: '.cell .cm-content',
    output: () => [...document.querySelectorAll('.cell')][0]?.querySelector('.outputs')?.textContent.includes('1'),
    // No kernel may be running before a first-output run.
    async reset(page) {
      await page.evaluate(async () => {
        const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
        const ks = await (await fetch('/api/v1/kernels')).json();
        for (const k of ks.items || ks) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
        for (let i = 0; i < 100; i++) { const l = await (await fetch('/api/v1/kernels')).json(); if (!(l.items || l).length) return 0; await new Promise((r) => setTimeout(r, 100)); }
        return 1;
      }).then((left) => { if (left) throw new Error('a kernel is still running after DELETE'); });
      await page.evaluate(() => { for (const k of Object.keys(localStorage)) if (k.startsWith('eddy.nb.')) localStorage.removeItem(k); });
    },
  },
  jupyter: {
    editable: () => !!(window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded && document.querySelector('.CodeMirror textarea')),
    editor: '.cell .CodeMirror',
    output: () => document.querySelector('.cell')?.querySelector('.output_area pre')?.textContent.includes('1'),
    async reset(page, base) {
      const r = await page.request.get(`${base}/api/sessions`);
      for (const s of await r.json()) await page.request.delete(`${base}/api/sessions/${s.id}`);
    },
  },
};

async function measure(name, browser, base, url, setup, restore) {
  const p = peers[name];
  const cold = [];
  for (let i = 0; i < RUNS; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 820 } });
    const page = await ctx.newPage();
    await setup(page);
    cold.push(await navTime(page, url, p.editable));
    await ctx.close();
  }
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 820 } });
  const page = await ctx.newPage();
  page.on('dialog', (d) => d.accept());
  await setup(page);
  let jsBytes = 0;
  page.on('response', async (r) => { if (/\.js(\?|$)/.test(r.url())) { const len = Number((await r.allHeaders())['content-length'] || 0); jsBytes += len; } });
  await navTime(page, url, p.editable);
  const jsLoaded = jsBytes;
  const warm = [];
  for (let i = 0; i < RUNS; i++) warm.push(await navTime(page, url, p.editable));
  const first = [];
  for (let i = 0; i < 3; i++) {
    // Leave the page (it saves what it ran), stop the kernel, and put the
    // notebook back as it was, without the output of the last run.
    await page.goto(`${base}/`, { waitUntil: 'load' });
    await p.reset(page, base);
    await restore();
    const t = await navTime(page, url, p.editable);
    await page.click(p.editor);
    await page.keyboard.press('Shift+Enter');
    await page.waitForFunction(p.output, null, { polling: 'raf', timeout: 120000 });
    first.push(await page.evaluate(() => performance.now()));
    void t;
    // The output came from a kernel started for it: the page had none.
  }
  await p.reset(page, base);
  await ctx.close();
  const row = { peer: name, load_cold_ms: Math.round(median(cold)), load_warm_ms: Math.round(median(warm)),
    first_output_ms: Math.round(median(first)), js_kb_over_wire: Math.round(jsLoaded / 1024) };
  console.log(`notebook_page peer=${name} load_cold_ms=${row.load_cold_ms} load_warm_ms=${row.load_warm_ms} first_output_ms=${row.first_output_ms} js_kb=${row.js_kb_over_wire}`);
  return row;
}

const nb = notebook();
const eddy = await startEddy();
let jupyter = null, browser;
try {
  browser = await launchBrowser();
  // Eddy: a session cookie per context (sign in first in each).
  const setupCtx = await browser.newContext();
  const sp = await setupCtx.newPage();
  await signIn(sp, eddy.base);
  const pid = await makeNotebook(sp, 'bench-page', 'bench.ipynb', nb);
  const cookies = await setupCtx.cookies();
  const rows = [await measure('eddy', browser, eddy.base, `${eddy.base}/projects/${encodeURIComponent(pid)}/notebook/bench.ipynb`,
    (page) => page.context().addCookies(cookies), () => sp.evaluate(async ({ pid, nb }) => {
      const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
      const r = await fetch(`/api/v1/projects/${pid}/files/bench.ipynb`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: JSON.stringify(nb) });
      if (!r.ok) throw new Error(`PUT notebook: ${r.status}`);
    }, { pid, nb }))];
  try { jupyter = await startJupyter(nb); } catch (e) { console.log(`notebook_page: Jupyter Notebook not measured: ${e.message.split('\n')[0]}`); }
  if (jupyter) rows.push(await measure('jupyter', browser, jupyter.base, `${jupyter.base}/notebooks/bench.ipynb`, async () => {},
    async () => writeFileSync(join(jupyter.dir, 'bench.ipynb'), JSON.stringify(nb))));
  console.table(rows);
  if (rows.length === 2) {
    const r = (k) => (rows[1][k] / rows[0][k]).toFixed(2);
    console.log(`notebook_page ratio jupyter/eddy: load_cold ${r('load_cold_ms')}x, load_warm ${r('load_warm_ms')}x, first_output ${r('first_output_ms')}x`);
  }
} finally {
  if (browser) await browser.close().catch(() => {});
  await eddy.stop();
  if (jupyter) await jupyter.stop();
}
