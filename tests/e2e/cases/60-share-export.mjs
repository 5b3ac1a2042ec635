// Notebook import, export and sharing (issue 14): screenshots 60-69.
// Import a notebook with a bad output (the message names the cell), import a
// good one (and replace it after the question), download it as .py, .html and
// .ipynb from the notebook's Download menu, make the project public in the
// Share dialog, open the link in a browser without a session (cells and
// outputs read-only, no editor, no kernel), press "Fork to run" (sign in,
// come back, the fork opens), and see a private project's link answer "not
// found" to that visitor. A second signed-in user who opens the editor URL
// of the public notebook gets the same read-only page (no editor, no key
// that edits, runs or saves: no write request leaves the page) and forks it.
import { readFile } from 'node:fs/promises';

// A 1x1 red PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

const GOOD = {
  nbformat: 4, nbformat_minor: 5,
  metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
  cells: [
    { cell_type: 'markdown', id: 'm1', metadata: {}, source: ['# Shared results\n', '\n', 'Made in *Jupyter*, read anywhere. ![pasted](attachment:dot.png)'],
      attachments: { 'dot.png': { 'image/png': PNG } } },
    { cell_type: 'code', id: 'c1', metadata: {}, execution_count: 3,
      source: ['%matplotlib inline\n', 'print("share-output-" + str(6 * 7))'],
      outputs: [
        { output_type: 'stream', name: 'stdout', text: ['share-output-42\n'] },
        { output_type: 'display_data', metadata: {}, data: { 'image/png': PNG, 'text/plain': ['<Figure>'] } },
        { output_type: 'execute_result', execution_count: 3, metadata: {},
          data: { 'text/html': ['<b id="bold-html">bold-html</b><script>document.title="pwned"</script>'], 'text/plain': ['bold'] } },
      ] },
    { cell_type: 'code', id: 'c2', metadata: {}, execution_count: null, source: 'x = 1', outputs: [] },
  ],
};

// Cell 2 (id abc) has an output of a type nbformat does not have.
const BAD = {
  nbformat: 4, nbformat_minor: 5, metadata: {},
  cells: [
    { cell_type: 'markdown', id: 'a', metadata: {}, source: 'fine' },
    { cell_type: 'code', id: 'abc', metadata: {}, execution_count: 1, source: 'x', outputs: [{ output_type: 'pdf' }] },
  ],
};

const file = (name, nb) => ({ name, mimeType: 'application/x-ipynb+json', buffer: Buffer.from(JSON.stringify(nb, null, 1)) });

export async function run(t) {
  const { page, base, state, assert, shot, fetchJson, rest, fileUrl, browser, USER } = t;
  const enc = encodeURIComponent;

  await t.test('import_notebook_names_the_bad_cell_then_imports_a_good_one', async () => {
    await page.goto(state.projectUrl);
    await page.waitForSelector('[data-testid=import-notebook]');
    await page.setInputFiles('[data-testid=import-file]', file('broken.ipynb', BAD));
    const msg = await (await page.waitForSelector('[data-testid=import-error]')).textContent();
    assert(/broken\.ipynb was not imported/.test(msg) && msg.includes('cell 2 (id abc)') && msg.includes('output_type must be one of'),
      `the refusal names the cell: ${msg}`);
    assert((await fetchJson(page, fileUrl(state.projectId, 'broken.ipynb'))).status === 404, 'nothing written');
    await shot(page, '60-import-refused');

    // a first version of the good one, then the real one replacing it after the question
    await page.setInputFiles('[data-testid=import-file]', file('shared.ipynb', { ...GOOD, cells: GOOD.cells.slice(0, 1) }));
    await page.waitForSelector('[data-testid=import-ok]:has-text("Imported shared.ipynb")');
    await page.waitForSelector('[data-testid=files] a:has-text("shared.ipynb")');
    assert(!(await page.$('[data-testid=import-error]')), 'the old refusal is gone');
    await page.setInputFiles('[data-testid=import-file]', file('shared.ipynb', GOOD));
    await page.waitForSelector('[data-testid=import-replace]');
    await shot(page, '61-import-replace');
    await page.click('[data-testid=import-replace-confirm]');
    await page.waitForSelector('.toast:has-text("Imported shared.ipynb")');
    const saved = JSON.parse((await fetchJson(page, fileUrl(state.projectId, 'shared.ipynb'))).body);
    assert(saved.cells.length === 3 && saved.cells[1].outputs.length === 3, `replaced: ${saved.cells.length} cells`);
  });

  await t.test('download_py_html_and_ipynb_from_the_notebook_menu', async () => {
    await page.goto(`${state.projectUrl}/notebook/shared.ipynb`);
    await page.waitForSelector('.cell[data-cell-id=c1] .outputs pre.stream:has-text("share-output-42")');
    await page.click('[data-testid=download-menu]');
    await page.waitForSelector('[data-testid=download-py]');
    await shot(page, '62-download-menu');
    const get = async (fmt) => {
      if (!(await page.isVisible(`[data-testid=download-${fmt}]`))) await page.click('[data-testid=download-menu]');
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid=download-${fmt}]`)]);
      return { name: dl.suggestedFilename(), text: await readFile(await dl.path(), 'utf8') };
    };
    const py = await get('py');
    assert(py.name === 'shared.py', `py file name ${py.name}`);
    assert(py.text.startsWith('# %% [markdown]\n# # Shared results\n') && py.text.includes('\n# %%\n# %matplotlib inline\nprint("share-output-" + str(6 * 7))\n'),
      `percent-format script: ${py.text}`);
    assert(!py.text.includes('share-output-42'), 'no outputs in the script');

    const html = await get('html');
    assert(html.name === 'shared.html', `html file name ${html.name}`);
    assert(!/<script|&lt;script|javascript:/i.test(html.text), 'no script in the HTML file, not even inside a frame');
    assert(html.text.includes('share-output-42') && /<h1[^>]*>Shared results<\/h1>/.test(html.text), 'outputs and rendered Markdown');
    assert(html.text.includes(`data:image/png;base64,${PNG}`), 'the image inline');
    assert(/<img[^>]*alt="pasted"[^>]*>/.test(html.text) && !html.text.includes('attachment:dot.png'), 'the Markdown attachment inline');
    assert(/Content-Security-Policy" content="default-src 'none'/.test(html.text) && !/<link\b/i.test(html.text.replace(/&lt;link/gi, '')), 'a CSP and no linked files');
    assert(/<iframe[^>]*sandbox=""/.test(html.text) && html.text.includes('bold-html'), 'HTML outputs in sandboxed frames');
    // what the file looks like, opened on its own
    const view = await t.ctx.newPage();
    await view.setContent(html.text);
    await view.waitForSelector('pre.stream');
    assert(await view.evaluate(() => document.title) !== 'pwned', 'the output script did not run');
    await shot(view, '63-export-html');
    await view.close();

    const nbFile = await get('ipynb');
    assert(nbFile.name === 'shared.ipynb', `ipynb file name ${nbFile.name}`);
    const server = (await fetchJson(page, fileUrl(state.projectId, 'shared.ipynb'))).body;
    assert(nbFile.text === server, 'the .ipynb is the saved file');
  });

  await t.test('share_public_then_read_only_without_a_session_and_fork_to_run', async () => {
    const projUrl = `/api/v1/projects/${enc(state.projectId)}`;
    const before = JSON.parse((await fetchJson(page, projUrl)).body).visibility;
    if (!page.url().endsWith('/notebook/shared.ipynb')) await page.goto(`${state.projectUrl}/notebook/shared.ipynb`);
    await page.click('[data-testid=share]');
    await page.waitForSelector('[data-testid=share-dialog] [data-testid=share-state]:has-text("is private")');
    await page.click('[data-testid=share-public]');
    await page.waitForSelector('[data-testid=share-confirm]:has-text("Everything in the project becomes readable by anyone")');
    await shot(page, '64-share-confirm');
    await page.click('[data-testid=share-confirm-public]');
    await page.waitForSelector('[data-testid=share-state]:has-text("is public")');
    const link = await page.inputValue('[data-testid=share-link]');
    assert(link === `${base}/projects/${enc(state.projectId)}/share/shared.ipynb`, `link ${link}`);
    // forks copy the last saved version: save one from the dialog
    await page.click('[data-testid=share-save-version]');
    await page.waitForSelector('.toast:has-text("Saved version: forks get it")');
    await shot(page, '65-share-dialog');
    await page.click('[data-testid=share-dialog] button:has-text("Close")');
    assert(JSON.parse((await fetchJson(page, projUrl)).body).visibility === 'public', 'the project is public');

    const anon = await browser.newContext({ viewport: { width: 1366, height: 820 } });
    try {
      const p2 = await anon.newPage();
      p2.setDefaultTimeout(10000);
      const errors = [];
      p2.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource|Blocked script execution in 'about:srcdoc'/.test(m.text())) errors.push(m.text()); });
      assert((await p2.request.get(`${base}/api/v1/me`)).status() === 401, 'no session in this context');
      await p2.goto(link);
      await p2.waitForSelector(`[data-testid=share-banner]:has-text("Read-only · ${USER.username}/first-project")`);
      await p2.waitForSelector('[data-testid=share-cells] .cell[data-cell-id=c1] pre.stream:has-text("share-output-42")');
      assert(await p2.textContent('[data-testid=share-cells] .markdown h1') === 'Shared results', 'Markdown rendered');
      assert((await p2.$$('[data-testid=share-cells] .cell')).length === 3, 'every cell shown');
      assert(await p2.$eval('.cell[data-cell-id=c1] .prompt', (e) => e.textContent) === '[3]', 'prompts kept');
      assert(await p2.$eval('.cell[data-cell-id=c1] img.out.image', (e) => e.src.startsWith('data:image/png')), 'image output');
      await p2.waitForFunction(() => { const i = document.querySelector('.cell[data-cell-id=m1] .markdown img'); return i && i.complete && i.naturalWidth === 1; });
      assert(await p2.$eval('.cell[data-cell-id=c1] iframe', (e) => e.getAttribute('sandbox') === ''), 'HTML output sandboxed');
      assert(!(await p2.$('.cm-editor')) && !(await p2.$('[data-testid=run]')) && !(await p2.$('[data-testid=kernel-status]')), 'no editor, no kernel');
      assert(await p2.title() !== 'pwned', 'the output script did not run');
      await shot(p2, '66-share-anonymous');
      // the notebook's own URL shows the same read-only page to this visitor
      await p2.goto(`${state.projectUrl}/notebook/shared.ipynb`);
      await p2.waitForSelector('[data-testid=share-banner]');
      assert(!(await p2.$('.cm-editor')), 'read-only at the notebook URL too');

      // Fork to run: sign in first, then come back and fork
      await p2.click('[data-testid=fork-to-run]');
      await p2.waitForURL('**/login');
      await shot(p2, '67-fork-sign-in');
      await p2.fill('input[name=username]', USER.username);
      await p2.fill('input[name=password]', USER.password);
      await p2.click('button[type=submit]');
      await p2.waitForURL(/\/projects\/[^/]+\/notebook\/shared\.ipynb$/, { timeout: 20000 });
      const forkId = decodeURIComponent(new URL(p2.url()).pathname.split('/')[2]);
      assert(forkId !== state.projectId, 'a new project opened');
      await p2.waitForSelector('.cell[data-cell-id=c1] .cm-content');
      const fork = JSON.parse((await fetchJson(p2, `/api/v1/projects/${enc(forkId)}`)).body);
      assert(fork.forked_from === state.projectId && fork.visibility === 'private', `the fork: ${JSON.stringify(fork)}`);
      await shot(p2, '68-forked-notebook');
      assert(errors.length === 0, `console errors: ${errors.join('\n')}`);
    } finally { await anon.close(); }

    // private again: a visitor without a session gets "not found"
    const r = await rest(page, 'PATCH', projUrl, { visibility: before });
    assert(r.status === 200, `PATCH visibility: ${r.status} ${r.body}`);
    if (before === 'private') {
      const anon2 = await browser.newContext({ viewport: { width: 1366, height: 820 } });
      try {
        const p3 = await anon2.newPage();
        await p3.goto(link);
        await p3.waitForSelector('[data-testid=share-not-found]');
        assert((await p3.request.get(`${base}/api/v1/projects/${enc(state.projectId)}`)).status() === 404, 'private: 404, not 401');
        await shot(p3, '69-share-private');
      } finally { await anon2.close(); }
    }
  });

  await t.test('another_user_at_the_notebook_url_gets_the_read_only_page_and_forks', async () => {
    const projUrl = `/api/v1/projects/${enc(state.projectId)}`;
    const before = JSON.parse((await fetchJson(page, projUrl)).body);
    assert(before.can_write === true, `the owner may write: ${JSON.stringify(before)}`);
    // a notebook of the first user's, public, in a saved version (forks copy that)
    const nb = { ...GOOD, cells: [GOOD.cells[0], GOOD.cells[2]] };
    let r = await rest(page, 'PUT', fileUrl(state.projectId, 'public-demo.ipynb'), JSON.stringify(nb, null, 1));
    assert(r.status === 200 || r.status === 201, `PUT the notebook: ${r.status} ${r.body}`);
    r = await rest(page, 'PATCH', projUrl, { visibility: 'public' });
    assert(r.status === 200, `PATCH public: ${r.status} ${r.body}`);
    r = await rest(page, 'POST', `${projUrl}/versions`, { message: 'public demo' });
    assert(r.status === 201 || r.status === 200, `save a version: ${r.status} ${r.body}`);
    const saved = (await fetchJson(page, fileUrl(state.projectId, 'public-demo.ipynb'))).body;

    const other = await browser.newContext({ viewport: { width: 1366, height: 820 } });
    try {
      const p2 = await other.newPage();
      p2.setDefaultTimeout(10000);
      const bob = { username: `bob${Date.now() % 100000}`, email: 'bob@example.org', password: 'battery-staple-7' };
      await p2.goto(`${base}/login`);
      const signed = await p2.evaluate(async (u) => {
        const s = await fetch('/api/v1/auth/signup', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(u) });
        const l = await fetch('/api/v1/auth/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: u.username, password: u.password }) });
        return `${s.status} ${l.status}`;
      }, bob);
      assert(signed === '201 200' || signed === '200 200', `sign-up and sign-in: ${signed}`);
      const seen = JSON.parse((await fetchJson(p2, projUrl)).body);
      assert(seen.can_write === false && seen.visibility === 'public', `another user may not write: ${JSON.stringify(seen)}`);
      // every request that would change something, from here on
      const writes = [];
      p2.on('request', (q) => { if (!['GET', 'HEAD', 'OPTIONS'].includes(q.method())) writes.push(`${q.method()} ${q.url()}`); });

      await p2.goto(`${state.projectUrl}/notebook/public-demo.ipynb`);
      await p2.waitForSelector(`[data-testid=share-banner]:has-text("Read-only · ${USER.username}/first-project")`);
      await p2.waitForSelector('[data-testid=share-not-yours]');
      assert(await p2.textContent('[data-testid=share-cells] .markdown h1') === 'Shared results', 'Markdown rendered');
      await p2.waitForFunction(() => { const i = document.querySelector('.cell[data-cell-id=m1] .markdown img'); return i && i.complete && i.naturalWidth === 1; });
      assert(!(await p2.$('.cm-editor')) && !(await p2.$('[contenteditable=true]')) && !(await p2.$('textarea')), 'nothing to type into');
      for (const id of ['run', 'run-all', 'save', 'save-version', 'add-cell', 'kernel-status', 'terminal', 'share', 'open-editor'])
        assert(!(await p2.$(`[data-testid=${id}]`)), `no ${id} control`);
      // Jupyter's keys do nothing here: select, edit, type, run, save, insert, delete
      await p2.click('.cell[data-cell-id=c2]');
      for (const k of ['Enter', 'x', 'Shift+Enter', 'Control+Enter', 'a', 'b', 'd', 'd', 's', 'm', 'Escape']) await p2.keyboard.press(k);
      await p2.keyboard.type('print("typed")\n');
      await p2.waitForTimeout(2500);   // longer than the editor's autosave delay
      assert(writes.length === 0, `no write request: ${writes.join(', ')}`);
      assert((await fetchJson(page, fileUrl(state.projectId, 'public-demo.ipynb'))).body === saved, 'the notebook is unchanged');
      assert(!(await p2.$('.cm-editor')), 'still no editor');
      await shot(p2, '69b-share-other-user');
      // the plain file editor at its URL is read-only for bob too: no Save, no write
      await p2.goto(`${state.projectUrl}/edit/public-demo.ipynb`);
      await p2.waitForSelector('[data-testid=read-only]');
      assert(await p2.$eval('textarea.editor', (t) => t.readOnly), 'the file editor is read-only');
      assert(!(await p2.$('button.primary:text("Save")')), 'no Save button');
      await p2.goto(`${state.projectUrl}/notebook/public-demo.ipynb`);
      await p2.waitForSelector('[data-testid=fork-to-run]');

      await p2.click('[data-testid=fork-to-run]');
      // the fork's notebook (this page is already at the source's)
      const projectOf = (u) => decodeURIComponent(new URL(u).pathname.split('/')[2] || '');
      await p2.waitForURL((u) => /\/notebook\/public-demo\.ipynb$/.test(u.pathname) && projectOf(u.href) !== state.projectId, { timeout: 20000 });
      const forkId = projectOf(p2.url());
      await p2.waitForSelector('.cell[data-cell-id=c2] .cm-content');
      const fork = JSON.parse((await fetchJson(p2, `/api/v1/projects/${enc(forkId)}`)).body);
      assert(fork.forked_from === state.projectId && fork.owner === bob.username && fork.can_write === true, `the fork is bob's: ${JSON.stringify(fork)}`);
      await shot(p2, '69c-share-other-user-fork');
    } finally {
      await other.close();
      await rest(page, 'PATCH', projUrl, { visibility: before.visibility });
    }
  });
}
