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
import { args, startEddy, launchBrowser, signIn, makeNotebook } from './web_bench.mjs';

const sizes = (args.sizes || '1000,4000,20000,200000').split(',').map(Number);
const eddy = await startEddy();
const base = eddy.base;

let browser;
try {
  browser = await launchBrowser();
  const page = await (await browser.newContext({ viewport: { width: 1366, height: 820 } })).newPage();
  page.setDefaultTimeout(600000);
  page.on('dialog', (d) => d.accept());
  await signIn(page, base);
  const pid = await makeNotebook(page, 'bench-output', 'out.ipynb', { nbformat: 4, nbformat_minor: 5, metadata: {},
    cells: [{ cell_type: 'code', id: 'c1', metadata: {}, source: 'print("warm")', outputs: [], execution_count: null }] });
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
  await eddy.stop();
}
