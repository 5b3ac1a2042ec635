// The notebook's side panel (issue 14); screenshots 40-49. Files: two files
// dropped from the "desktop" (a synthetic drop with a DataTransfer built in
// the page) upload with progress bars and show in the tree; a second drop of
// an existing name asks before replacing; an invalid notebook shows the
// server's 422 message; a new folder, a file renamed into it, the file
// downloaded (its bytes checked), the folder deleted; a file written through
// the API by "another tab" shows without a reload, and nothing is polled
// while the panel is collapsed. Contents: the Markdown headings of a
// notebook with three of them, in order and indented; a click selects that
// cell; a heading typed into a new Markdown cell joins the list. The module
// works in a project of its own (deleted at the end) and starts no kernel.
import { readFileSync } from 'node:fs';

const NB = 'toc.ipynb';

function notebook() {
  const md = (id, source) => ({ cell_type: 'markdown', id, metadata: {}, source });
  const code = (id, source) => ({ cell_type: 'code', id, metadata: {}, source, outputs: [], execution_count: null });
  return {
    nbformat: 4, nbformat_minor: 5, metadata: {},
    cells: [
      md('h-intro', '# Introduction\nWhat this is about.'),
      code('c-load', 'import csv\n# not a heading: a comment in code'),
      md('h-data', '## Loading the *data*\n```\n# not a heading either\n```'),
      code('c-train', 'print(1)'),
      md('h-results', 'Results\n======='),
      code('c-last', ''),
    ],
  };
}

// Drop `files` ([{name, text} | {name, size}]) on the element `selector`, as
// a desktop drag does: dragenter, dragover, drop with one DataTransfer.
async function drop(page, selector, files) {
  await page.evaluate(({ selector, files }) => {
    const dt = new DataTransfer();
    for (const f of files) {
      let body = f.text;
      if (body === undefined) {
        body = new Uint8Array(f.size);
        for (let i = 0; i < body.length; i++) body[i] = (i * 7 + 3) % 251;
      }
      dt.items.add(new File([body], f.name));
    }
    const el = document.querySelector(selector);
    if (!el) throw new Error(`nothing matches ${selector}`);
    for (const type of ['dragenter', 'dragover', 'drop']) el.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, { selector, files });
}

export async function run(t) {
  const { page, assert, shot, rest, fileUrl } = t;
  let pid = null, nbUrl = null;
  const row = (path) => `[data-testid=file-tree] li[data-path="${path}"]`;
  const read = async (path) => rest(page, 'GET', fileUrl(pid, path));
  const menu = async (path, action) => {
    await page.hover(row(path));
    await page.click(`${row(path)} [data-testid=item-menu]`);
    await page.click(`[data-testid=fb-menu] [data-action="${action}"]`);
  };
  const openPanel = async () => {
    await page.waitForSelector('[data-testid=side-panel]');
    if (await page.$('[data-testid=side-panel].collapsed')) await page.click('[data-testid=side-panel-toggle]');
    for (const s of ['side-files', 'side-contents']) if (await page.$(`[data-testid=${s}].folded`)) await page.click(`[data-testid=${s}-head]`);
  };

  await t.test('side_panel_uploads_dropped_files_with_progress', async () => {
    const r = await rest(page, 'POST', '/api/v1/projects', { name: `side-panel-${Date.now()}`, visibility: 'private' });
    assert(r.status === 201, `POST project ${r.status}: ${r.body}`);
    pid = JSON.parse(r.body).id;
    const w = await rest(page, 'PUT', fileUrl(pid, NB), JSON.stringify(notebook()));
    assert(w.status === 201, `PUT ${NB}: ${w.status} ${w.body}`);
    nbUrl = `${t.base}/projects/${encodeURIComponent(pid)}/notebook/${NB}`;
    await page.goto(nbUrl);
    await page.waitForSelector('.cell .cm-content');
    await openPanel();
    await page.waitForSelector(`${row(NB)}.current`);

    await drop(page, '[data-testid=file-browser]', [{ name: 'first.csv', text: 'a,b\n1,2\n' }, { name: 'second.bin', size: 3 << 20 }]);
    // each file has its row with a progress bar that reaches the end
    for (const name of ['first.csv', 'second.bin']) {
      const sel = `[data-testid=upload-row][data-path="${name}"]`;
      await page.waitForSelector(`${sel}[data-state=done]`, { timeout: 15000 });
      const p = await page.$eval(sel, (el) => ({ value: el.querySelector('progress').value, max: el.querySelector('progress').max, events: Number(el.dataset.progressEvents || 0) }));
      assert(p.events >= 1 && p.value === p.max && p.max > 0, `${name}: progress ${JSON.stringify(p)}`);
    }
    await shot(page, '40-side-panel-upload');
    await page.waitForSelector(row('first.csv'));
    await page.waitForSelector(row('second.bin'));
    const got = await page.evaluate(async (u) => { const b = new Uint8Array(await (await fetch(u)).arrayBuffer()); let ok = b.length === 3 << 20; for (let i = 0; ok && i < b.length; i += 4099) ok = b[i] === (i * 7 + 3) % 251; return ok; }, fileUrl(pid, 'second.bin'));
    assert(got, 'second.bin has the dropped bytes');
    assert((await read('first.csv')).body === 'a,b\n1,2\n', 'first.csv has the dropped text');
  });

  await t.test('side_panel_asks_before_replacing_and_shows_server_errors', async () => {
    assert(pid, 'the upload test made the project');
    await drop(page, '[data-testid=file-browser]', [{ name: 'first.csv', text: 'replaced\n' }]);
    await page.waitForSelector('[data-testid=replace-dialog]');
    await page.click('[data-testid=replace-dialog] button:has-text("Keep the existing file")');
    await page.waitForSelector('[data-testid=upload-row][data-path="first.csv"][data-state=skipped]');
    assert((await read('first.csv')).body === 'a,b\n1,2\n', 'kept: nothing replaced without asking');
    await drop(page, '[data-testid=file-browser]', [{ name: 'first.csv', text: 'replaced\n' }]);
    await page.click('[data-testid=replace-confirm]');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=upload-row][data-path="first.csv"]')].some((r) => r.dataset.state === 'done'));
    assert((await read('first.csv')).body === 'replaced\n', 'replaced after the user said so');
    // an invalid notebook: the server's 422 message, in the row
    await drop(page, '[data-testid=file-browser]', [{ name: 'broken.ipynb', text: '{"cells": 7}' }]);
    const err = await page.waitForSelector('[data-testid=upload-row][data-path="broken.ipynb"][data-state=error]');
    const msg = await err.textContent();
    assert(/not accepted/.test(msg) && /nbformat|cells|notebook/i.test(msg), `error row: ${msg}`);
    assert((await read('broken.ipynb')).status === 404, 'nothing written');
    await shot(page, '41-side-panel-upload-error');
  });

  await t.test('side_panel_new_folder_rename_download_delete', async () => {
    assert(pid, 'the upload test made the project');
    await page.click('[data-testid=fb-new-folder]');
    await page.waitForFunction(() => document.activeElement?.matches('[data-testid=new-folder-dialog] [data-testid=fb-input]'));
    await page.fill('[data-testid=new-folder-dialog] [data-testid=fb-input]', 'data');
    await page.click('[data-testid=new-folder-dialog-ok]');
    await page.waitForSelector(`${row('data')}[data-type=directory]`);
    // the empty folder is real on the server
    const l = JSON.parse((await rest(page, 'GET', `/api/v1/projects/${encodeURIComponent(pid)}/files?dirs=1`)).body);
    assert(l.items.some((x) => x.path === 'data' && x.type === 'directory'), 'GET files?dirs=1 lists the new folder');

    await menu('first.csv', 'rename');
    // the dialog focuses its input and selects the name a tick after it opens:
    // fill only then, or the selection lands in the middle of fill's typing
    await page.waitForFunction(() => document.activeElement?.matches('[data-testid=rename-dialog] [data-testid=fb-input]'));
    await page.fill('[data-testid=rename-dialog] [data-testid=fb-input]', 'data/first.csv');
    await page.click('[data-testid=rename-dialog-ok]');
    await page.waitForSelector(row('data/first.csv'));
    await page.waitForSelector(row('first.csv'), { state: 'detached' });
    assert((await read('data/first.csv')).body === 'replaced\n', 'moved with its bytes');
    assert((await read('first.csv')).status === 404, 'the old path is gone');

    const [dl] = await Promise.all([page.waitForEvent('download'), menu('data/first.csv', 'download')]);
    assert(dl.suggestedFilename() === 'first.csv', `download name ${dl.suggestedFilename()}`);
    const bytes = readFileSync(await dl.path(), 'utf8');
    assert(bytes === 'replaced\n', `downloaded bytes ${JSON.stringify(bytes)}`);
    await shot(page, '42-side-panel-folder');

    await menu('data', 'delete');
    const text = await (await page.waitForSelector('[data-testid=delete-dialog]')).textContent();
    assert(/1 file/.test(text), `the dialog says what goes: ${text}`);
    await page.click('[data-testid=delete-confirm]');
    await page.waitForSelector(row('data'), { state: 'detached' });
    assert((await read('data/first.csv')).status === 404, 'the folder and its file are deleted');
  });

  await t.test('side_panel_file_list_is_live_and_idle_when_collapsed', async () => {
    assert(pid, 'the upload test made the project');
    // written by "another tab": shows without a reload
    const w = await rest(page, 'PUT', fileUrl(pid, 'from-elsewhere.txt'), 'hi');
    assert(w.status === 201, `PUT ${w.status}`);
    await page.waitForSelector(row('from-elsewhere.txt'), { timeout: 3000 });
    // collapsed: no list requests
    let polls = 0;
    const count = (req) => { if (/\/files\?dirs=1/.test(req.url())) polls++; };
    await page.click('[data-testid=side-panel-toggle]');
    await page.waitForSelector('[data-testid=side-panel].collapsed');
    page.on('request', count);
    await page.waitForTimeout(2500);
    const whileCollapsed = polls;
    await page.click('[data-testid=side-panel-toggle]');
    await page.waitForSelector('[data-testid=side-panel]:not(.collapsed)');
    await page.waitForTimeout(1500);
    page.off('request', count);
    assert(whileCollapsed === 0, `${whileCollapsed} list requests while collapsed`);
    assert(polls > 0, 'the list is fetched again once the panel is open');
    // the state is remembered
    const saved = await page.evaluate(() => JSON.parse(localStorage.getItem('eddy.sidepanel') || '{}'));
    assert(saved.open === true, `remembered ${JSON.stringify(saved)}`);
  });

  await t.test('side_panel_table_of_contents_selects_the_heading_cell', async () => {
    assert(pid, 'the upload test made the project');
    await openPanel();
    const links = async () => page.$$eval('[data-testid=toc] .toc-link', (as) => as.map((a) => ({ text: a.textContent, cell: a.dataset.cellId, level: a.dataset.level })));
    let toc = await links();
    assert(JSON.stringify(toc.map((x) => x.text)) === JSON.stringify(['Introduction', 'Loading the data', 'Results']), `headings ${JSON.stringify(toc)}`);
    assert(toc.map((x) => x.level).join() === '1,2,1', `levels ${JSON.stringify(toc)}`);
    await page.click('[data-testid=toc] .toc-link:has-text("Loading the data")');
    await page.waitForFunction(() => document.querySelector('.cell.selected')?.dataset.cellId === 'h-data');
    await page.click('[data-testid=toc] .toc-link:has-text("Results")');
    await page.waitForFunction(() => document.querySelector('.cell.selected')?.dataset.cellId === 'h-results');
    const box = await page.$eval('.cell[data-cell-id="h-results"]', (el) => ({ top: el.getBoundingClientRect().top, h: window.innerHeight }));
    assert(box.top >= -2 && box.top < box.h - 20, `the heading's cell is scrolled into view (${JSON.stringify(box)})`);
    // a heading typed into a new Markdown cell joins the list
    await page.click('.cell[data-cell-id="c-last"] .prompt');
    await page.keyboard.press('m');
    await page.keyboard.press('Enter');
    await page.keyboard.type('## Appendix');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=toc] .toc-link')].some((a) => a.textContent === 'Appendix'), null, { timeout: 5000 });
    toc = await links();
    assert(toc.length === 4 && toc[3].cell === 'c-last', `after the new heading ${JSON.stringify(toc)}`);
    await page.check('[data-testid=toc-numbered]');
    await page.waitForFunction(() => document.querySelector('[data-testid=toc] .toc-link')?.textContent.startsWith('1 '));
    const nums = await page.$$eval('[data-testid=toc] .toc-num', (s) => s.map((x) => x.textContent.trim()));
    assert(nums.join() === '1,1.1,2,2.1', `numbers ${nums}`);
    await page.uncheck('[data-testid=toc-numbered]');
    await shot(page, '43-side-panel');
    // the notebook saves before the project goes
    await page.waitForFunction(() => /^Saved/.test(document.querySelector('[data-testid=save-status]')?.textContent || ''), null, { timeout: 15000 });
  });

  if (pid) {
    await page.goto(`${t.base}/projects`);
    await rest(page, 'DELETE', `/api/v1/projects/${encodeURIComponent(pid)}`);
  }
}
