// Live resource meters (issue 14); screenshots 70-79. Running a cell starts
// the kernel; a busy thread and 200 MB (sent through the REST execute, so
// the notebook is left as it was) show in the toolbar's meters as a CPU
// percentage and "RAM x / y GiB" with bars, and the coins so far ("free"
// on cpu-basic); the Kernels panel shows the same CPU, RAM and cost
// columns. Where the host runs kernels without cgroups the meters say
// "n/a" and the test skips, saying so. The module stops its kernel, and
// the meters then hide.

async function stopKernels(page) {
  return page.evaluate(async () => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const live = (await (await fetch('/api/v1/kernels')).json()).items.filter((k) => k.status !== 'dead');
    for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
    return live.length;
  });
}

const BUSY = [
  'import threading, time',
  "_meter_hog = b'\\x01' * (200 << 20)",
  'def _meter_spin():',
  '    end = time.time() + 90',
  '    while time.time() < end:',
  '        pass',
  'threading.Thread(target=_meter_spin, daemon=True).start()',
].join('\n');

const meterText = (page, id) => page.$eval(`[data-testid=${id}] .meter-value`, (e) => e.textContent).catch(() => null);

export async function run(t) {
  const { page, state, assert, shot } = t;

  await t.test('meters_show_a_running_kernels_cpu_ram_and_cost', async () => {
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    await stopKernels(page);   // the free tier runs one kernel: this notebook's
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    assert(await page.$eval('[data-testid=meters]', (e) => e.hidden), 'no meters without a kernel');
    await page.click('.cell .cm-content');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 60000 });
    await page.waitForSelector('[data-testid=meters]:not([hidden]) [data-testid=meter-cpu]', { timeout: 15000 });
    if ((await meterText(page, 'meter-cpu')) === 'n/a') {
      const title = await page.$eval('[data-testid=meter-cpu]', (e) => e.title);
      await shot(page, '70-meters-not-measured');
      await stopKernels(page);
      return { skip: `this host does not measure kernels (no cgroups): ${title}` };
    }
    const kernels = JSON.parse((await t.fetchJson(page, '/api/v1/kernels')).body).items.filter((k) => k.status !== 'dead');
    assert(kernels.length === 1, `one kernel runs: ${JSON.stringify(kernels)}`);
    const r = await t.rest(page, 'POST', `/api/v1/kernels/${kernels[0].id}/execute`, { code: BUSY });
    assert(r.status === 202, `execute: ${r.status} ${r.body}`);
    // within 20 s the meters show the busy core and the 200 MB
    let cpu = null, ram = null;
    for (let i = 0; i < 40; i++) {
      cpu = await meterText(page, 'meter-cpu');
      ram = await meterText(page, 'meter-ram');
      const pct = Number((/^(\d+)%$/.exec(cpu || '') || [])[1]);
      const used = Number((/^([\d.]+) \/ ([\d.]+) GiB$/.exec(ram || '') || [])[1]);
      if (pct > 30 && used >= 0.2) break;
      await page.waitForTimeout(500);
    }
    assert(/^\d+%$/.test(cpu) && Number(cpu.slice(0, -1)) > 30, `the CPU meter shows the busy thread: ${cpu}`);
    assert(/^0\.[2-9] \/ 4\.0 GiB$|^[1-9][\d.]* \/ 4\.0 GiB$/.test(ram), `the RAM meter shows 200 MB of the class's 4 GiB: ${ram}`);
    assert((await meterText(page, 'meter-cost')) === 'free', 'cpu-basic is free for the free tier');
    const tips = await page.$$eval('[data-testid=meters] .meter', (els) => els.map((e) => e.title));
    assert(tips.every((x) => x.length > 10), `every meter says what it is: ${JSON.stringify(tips)}`);
    const fill = await page.$eval('[data-testid=meter-ram] .meter-fill', (e) => parseFloat(e.style.width));
    assert(fill > 3 && fill < 50, `the RAM bar is the share of the limit: ${fill}%`);
    assert(!(await page.$('[data-testid=meter-gpu]')), 'no GPU meter on a CPU class');
    await page.hover('[data-testid=meter-cpu]');
    await shot(page, '70-meters');

    // the Kernels panel: CPU, RAM and the cost from the same readings
    await page.click('[data-testid=open-kernels]');
    const row = `[data-testid=kernels-dialog] tr[data-kernel-id="${kernels[0].id}"]`;
    await page.waitForSelector(row);
    await page.waitForFunction((sel) => /^\d+%$/.test(document.querySelector(`${sel} [data-testid=kernel-cpu]`)?.textContent || ''), row, { timeout: 15000 });
    const cells = await page.$eval(row, (tr) => ({
      cpu: tr.querySelector('[data-testid=kernel-cpu]').textContent,
      ram: tr.querySelector('[data-testid=kernel-ram]').textContent,
      cost: tr.querySelector('[data-testid=kernel-cost]').textContent,
    }));
    assert(/GiB$/.test(cells.ram) && cells.cost === 'free', `the panel's columns: ${JSON.stringify(cells)}`);
    await shot(page, '71-kernels-panel-meters');
    await page.click('[data-testid=kernels-dialog] button:has-text("Close")');

    // stopped: the meters go
    await stopKernels(page);
    await page.waitForSelector('[data-testid=meters][hidden]', { state: 'attached', timeout: 30000 });
    await shot(page, '72-meters-hidden-after-stop');
  });
}
