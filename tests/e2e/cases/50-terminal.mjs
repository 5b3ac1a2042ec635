// The terminal (issue 14); screenshots 50-59. The notebook's Terminal button
// starts the kernel and opens a shell inside its sandbox in a dock at the
// bottom (xterm.js, loaded only then); `echo $((6*7))` prints 42 in the
// xterm screen; the shell sees the project's files; after a reload the
// button reconnects to the same shell and its screen comes back; Close
// ends it (the server lists no terminal). The module stops its kernel.
// Opening the running-kernels panel once made the screen a few pixels wide
// for a frame; the shell was told "2 columns", and bash's redraw when the
// width came back erased the screen (the replay after a reload too): the
// shell must only ever get the dock's real, settled size.

async function stopKernels(page) {
  return page.evaluate(async () => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const live = (await (await fetch('/api/v1/kernels')).json()).items.filter((k) => k.status !== 'dead');
    for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
    return live.length;
  });
}

// The text xterm.js shows (its DOM renderer's rows).
const screenText = (page) => page.evaluate(() => [...document.querySelectorAll('[data-testid=terminal-screen] .xterm-rows > div')].map((r) => r.textContent).join('\n'));

async function waitScreen(page, re, timeout = 30000) {
  try {
    await page.waitForFunction((src) => new RegExp(src, 'm').test([...document.querySelectorAll('[data-testid=terminal-screen] .xterm-rows > div')].map((r) => r.textContent).join('\n')), re.source, { timeout });
  } catch (e) {
    throw new Error(`the terminal never showed ${re}; it shows:\n${await screenText(page)}`);
  }
}

export async function run(t) {
  const { page, state, assert, shot } = t;
  // every size the page tells the shell
  const sizes = [];
  page.on('websocket', (ws) => {
    if (!/\/terminals\/[^/]+\/ws$/.test(ws.url())) return;
    ws.on('framesent', (f) => { try { const m = JSON.parse(f.payload); if (m[0] === 'set_size') sizes.push([m[1], m[2]]); } catch { /* not ours */ } });
  });

  await t.test('terminal_runs_a_shell_in_the_kernels_sandbox', async () => {
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    await stopKernels(page);   // the free tier runs one kernel: this notebook's
    await page.goto(state.notebookUrl);
    await page.waitForSelector('[data-testid=terminal]');
    const before = await page.evaluate(() => [...document.scripts].map((s) => s.src).concat(performance.getEntriesByType('resource').map((e) => e.name)).filter((u) => /terminal-[^/]*\.js/.test(u)).length);
    assert(before === 0, 'xterm.js is not loaded before the button is pressed');
    await page.click('[data-testid=terminal]');
    await page.waitForSelector('[data-testid=terminal-dock] .xterm', { timeout: 90000 });
    await page.waitForFunction(() => (document.querySelector('[data-testid=terminal-state]')?.textContent ?? 'x') === '', null, { timeout: 30000 });
    await page.click('[data-testid=terminal-screen]');
    await page.keyboard.type('echo $((6*7)); ls /home/aistudio/work\n');
    await waitScreen(page, /^42\s*$/);
    const screen = await screenText(page);
    const nbName = state.notebookUrl.split('/').pop();
    assert(screen.includes(decodeURIComponent(nbName)), `the shell sees the project's files (${nbName}):\n${screen}`);
    await shot(page, '50-terminal');
    // The running-kernels panel lists the terminal with its kernel's
    // project; looking at it leaves the terminal as it was (its screen
    // comes back after the reload below).
    await page.click('[data-testid=open-kernels]');
    await page.waitForSelector('[data-testid=kernels-dialog] [data-testid=terminal-row]', { timeout: 15000 });
    const rows = await page.$$eval('[data-testid=kernels-dialog] [data-testid=terminal-row]', (r) => r.map((x) => x.textContent));
    assert(rows.length === 1 && /Terminal/.test(rows[0]), `one terminal row: ${JSON.stringify(rows)}`);
    await shot(page, '53-kernels-panel-with-terminal');
    await page.click('[data-testid=kernels-dialog] .modal-actions button:has-text("Close")');
    await page.waitForSelector('[data-testid=kernels-dialog]', { state: 'detached', timeout: 10000 });
    // the same for a layout of a moment made on purpose: the dock 4 px wide for two frames
    await page.evaluate(() => new Promise((res) => {
      const d = document.querySelector('[data-testid=terminal-dock]');
      d.style.right = 'calc(100% - 4px)';
      requestAnimationFrame(() => requestAnimationFrame(() => { d.style.right = ''; res(); }));
    }));
    await page.click('[data-testid=terminal-screen]');
    await page.keyboard.type('stty size\n');
    await waitScreen(page, /^\d+ \d+\s*$/);
    const text = await screenText(page);
    assert(/^42\s*$/m.test(text), `the screen above the prompt is intact:\n${text}`);
    const tiny = sizes.filter(([, cols]) => cols < 20);
    assert(sizes.length > 0 && tiny.length === 0, `the shell was never told a size of a moment: ${JSON.stringify(sizes)}`);
    const [shRows, shCols] = text.match(/^(\d+) (\d+)\s*$/m).slice(1).map(Number);
    assert(shRows === sizes[sizes.length - 1][0] && shCols === sizes[sizes.length - 1][1], `the shell has the screen's size: ${shRows}x${shCols}, sent ${JSON.stringify(sizes)}`);
  });

  await t.test('terminal_survives_a_reload_and_closes', async () => {
    await page.reload();
    await page.waitForSelector('[data-testid=terminal]');
    assert(!(await page.$('[data-testid=terminal-dock]')), 'the dock opens only when asked');
    await page.click('[data-testid=terminal]');
    await page.waitForSelector('[data-testid=terminal-dock] .xterm', { timeout: 60000 });
    // the same shell: its screen comes back from the server's replay
    await waitScreen(page, /^42\s*$/);
    const list = JSON.parse((await t.fetchJson(page, '/api/terminals')).body);
    assert(list.length === 1, `one terminal, the same one: ${JSON.stringify(list)}`);
    await page.click('[data-testid=terminal-screen]');
    await page.keyboard.type('echo again-$((40+2))\n');
    await waitScreen(page, /^again-42/);
    await shot(page, '51-terminal-after-reload');
    await page.click('[data-testid=terminal-close]');
    await page.waitForSelector('[data-testid=terminal-dock]', { state: 'detached', timeout: 20000 });
    const after = JSON.parse((await t.fetchJson(page, '/api/terminals')).body);
    assert(after.length === 0, `Close ended the terminal: ${JSON.stringify(after)}`);
    await shot(page, '52-terminal-closed');
    await stopKernels(page);
  });
}
