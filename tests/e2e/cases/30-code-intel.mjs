// Code intelligence and find/replace in the notebook editor (issue 14);
// screenshots 30-39. Completion (Tab, and while typing after `.`) and the
// docstring tooltip (Shift+Tab) come from the kernel (complete_request,
// inspect_request over its channels WebSocket); Ctrl+/ comments, Enter after
// `def f():` indents 4 spaces, closing brackets are added as typed; the find
// bar searches every cell and replaces across them, and the saved notebook
// has the replacements. The module stops its kernel at the end.
const NB = 'codeintel.ipynb';

function notebook(sources) {
  return {
    nbformat: 4, nbformat_minor: 5, metadata: {},
    cells: sources.map(([type, source], i) => ({
      cell_type: type, id: `ci${i}`, metadata: {}, source,
      ...(type === 'code' ? { outputs: [], execution_count: null } : {}),
    })),
  };
}

// The text of cell i's editor, line by line.
const cellText = (page, i) => page.evaluate((n) => [...document.querySelectorAll('.cell')[n].querySelectorAll('.cm-line')].map((l) => l.textContent).join('\n'), i);

async function stopKernels(page) {
  return page.evaluate(async () => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const live = (await (await fetch('/api/v1/kernels')).json()).items.filter((k) => k.status !== 'dead');
    for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
    return live.length;
  });
}

export async function run(t) {
  const { page, state, assert, shot, rest, fileUrl } = t;
  const nbUrl = () => state.notebookUrl.replace(/[^/]+$/, NB);
  const open = async (sources) => {
    // The page open now saves its edits first (its autosave would otherwise
    // merge them into the notebook written here).
    await page.waitForFunction(() => { const s = document.querySelector('[data-testid=save-status]'); return !s || /^Saved/.test(s.textContent); }, null, { timeout: 30000 });
    const r = await rest(page, 'PUT', fileUrl(state.projectId, NB), JSON.stringify(notebook(sources)));
    assert(r.status === 200 || r.status === 201, `PUT ${NB}: ${r.status}`);
    await page.goto(nbUrl());
    await page.waitForSelector('.cell .cm-content');
  };
  const editCell = async (i, text) => {
    await page.click(`.cell >> nth=${i} >> .cm-content`);
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Delete');
    if (text) await page.keyboard.type(text);
  };

  await t.test('code_intel_tab_completes_paddle_from_the_kernel', async () => {
    await page.goto(state.notebookUrl);
    await page.waitForSelector('.cell .cm-content');
    await stopKernels(page);   // the free tier runs one kernel: this notebook needs it
    await open([['code', 'import paddle'], ['code', '']]);
    // Tab with no kernel: the notebook's own words, and no kernel is started.
    await page.evaluate(() => localStorage.setItem('eddy.codeintel.hint', 'off'));
    await editCell(1, 'impo');
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("import")');
    await page.keyboard.press('Escape');
    const kernels = JSON.parse((await t.fetchJson(page, '/api/v1/kernels')).body).items.filter((k) => k.status !== 'dead');
    assert(kernels.length === 0, `completion started no kernel (${kernels.length} running)`);
    // Run `import paddle`, then complete through the kernel.
    await page.click('.cell >> nth=0 >> .cm-content');
    await page.keyboard.press('Control+Enter');
    await page.waitForFunction(() => /^\[\d+\]$/.test(document.querySelector('.cell .prompt')?.textContent || ''), null, { timeout: 90000 });
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 30000 });
    await editCell(1, 'x = paddle.nn.Lin');
    const t0 = Date.now();
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("Linear")', { timeout: 20000 });
    console.log(`e2e: Tab to the kernel's completion list ${Date.now() - t0} ms (first request: opens the channel)`);
    await page.keyboard.press('Escape');
    const t1 = Date.now();
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("Linear")', { timeout: 20000 });
    console.log(`e2e: Tab to the kernel's completion list ${Date.now() - t1} ms (channel open)`);
    const labels = await page.$$eval('.cm-tooltip-autocomplete li', (els) => els.map((e) => e.textContent));
    assert(labels.some((l) => l.startsWith('Linear')), `the list offers Linear: ${labels.join(', ')}`);
    await shot(page, '30-completion-list');
    // CodeMirror ignores Enter within 75 ms of a list opening (interactionDelay),
    // so that a key already on its way does not take a choice: a person is slower.
    await page.waitForTimeout(150);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !document.querySelector('.cm-tooltip-autocomplete'));
    assert((await cellText(page, 1)) === 'x = paddle.nn.Linear', `Enter inserted it: ${await cellText(page, 1)}`);
    assert((await page.textContent('[data-testid=mode]')) === 'edit', 'still in edit mode after Enter took the completion');
    // Cursor positions go to the kernel in code points (an emoji is two
    // UTF-16 units), with text after the cursor.
    await editCell(1, 's = "\u{1F600}"; y = paddle.nn.Lin  # tail');
    for (let i = 0; i < '  # tail'.length; i++) await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("Linear")', { timeout: 20000 });
    await page.waitForTimeout(150);   // interactionDelay, as above
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !document.querySelector('.cm-tooltip-autocomplete'));
    assert((await cellText(page, 1)) === 's = "\u{1F600}"; y = paddle.nn.Linear  # tail', `inserted at the cursor: ${await cellText(page, 1)}`);
    // Module names after `import`, and completion while typing after a dot.
    await editCell(1, 'import jso');
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("json")', { timeout: 20000 });
    await page.keyboard.press('Escape');
    // A call's parameters by name, and file names in a string.
    await editCell(1, 'paddle.nn.Linear(3, 4, bias');
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("bias_attr=")', { timeout: 20000 });
    await page.keyboard.press('Escape');
    await editCell(1, 'open("codeint');
    await page.keyboard.press('Tab');
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("codeintel.ipynb")', { timeout: 20000 });
    await page.keyboard.press('Escape');
    await page.evaluate(() => localStorage.removeItem('eddy.codeintel.hint'));
    await editCell(1, 'paddle.');
    await page.waitForSelector('.cm-tooltip-autocomplete', { timeout: 20000 });
    await page.keyboard.type('zeros_l');   // filters the open list
    await page.waitForSelector('.cm-tooltip-autocomplete li:has-text("zeros_like")', { timeout: 20000 });
    await page.keyboard.press('Escape');
    assert(!(await page.isVisible('.cm-tooltip-autocomplete')), 'Escape closed the list');
    assert((await page.textContent('[data-testid=mode]')) === 'edit', 'Escape with the list open stays in edit mode');
    // Tab after spaces indents to the next multiple of 4.
    await editCell(1, '');
    await page.keyboard.press('Tab');
    await page.keyboard.type('z');
    assert((await cellText(page, 1)) === '    z', `Tab at the line start indents 4 spaces: ${JSON.stringify(await cellText(page, 1))}`);
  });

  await t.test('code_intel_shift_tab_shows_the_docstring', async () => {
    await page.waitForSelector('[data-testid=kernel-status][data-status=idle]', { timeout: 30000 });
    await editCell(1, 'paddle.nn.Linear');
    const t0 = Date.now();
    await page.keyboard.press('Shift+Tab');
    const tip = await page.waitForSelector('[data-testid=doc-tooltip]', { timeout: 20000 });
    console.log(`e2e: Shift+Tab to the docstring tooltip ${Date.now() - t0} ms`);
    const text = await tip.textContent();
    assert(text.includes('Init signature: paddle.nn.Linear(in_features, out_features'), `signature shown: ${text.slice(0, 200)}`);
    assert(text.includes('Docstring') && text.includes('y = x @ weight + bias'), `docstring shown: ${text.slice(0, 300)}`);
    await shot(page, '31-docstring-tooltip');
    await page.keyboard.press('Escape');
    await page.waitForSelector('[data-testid=doc-tooltip]', { state: 'detached' });
    assert((await page.textContent('[data-testid=mode]')) === 'edit', 'Escape closed the tooltip, not edit mode');
    assert((await cellText(page, 1)) === 'paddle.nn.Linear', 'Shift+Tab changed no text');
  });

  await t.test('code_intel_comments_indents_and_closes_brackets', async () => {
    // Ctrl+/ on two selected lines comments both with Python's `# `, and back.
    await editCell(1, 'a = 1\nb = 2');
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Control+/');
    assert((await cellText(page, 1)) === '# a = 1\n# b = 2', `commented: ${JSON.stringify(await cellText(page, 1))}`);
    await page.keyboard.press('Control+/');
    assert((await cellText(page, 1)) === 'a = 1\nb = 2', `uncommented: ${JSON.stringify(await cellText(page, 1))}`);
    // In a Markdown cell Ctrl+/ wraps the lines in <!-- -->.
    await page.keyboard.press('Escape');
    await page.keyboard.press('b');
    await page.keyboard.press('m');
    await page.keyboard.press('Enter');
    await page.keyboard.type('Some notes');
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Control+/');
    assert((await cellText(page, 2)) === '<!-- Some notes -->', `Markdown comment: ${JSON.stringify(await cellText(page, 2))}`);
    await page.keyboard.press('Control+/');
    assert((await cellText(page, 2)) === 'Some notes', `Markdown uncommented: ${JSON.stringify(await cellText(page, 2))}`);
    await page.keyboard.press('Escape');
    await page.keyboard.press('d');
    await page.keyboard.press('d');
    await page.waitForFunction(() => document.querySelectorAll('.cell').length === 2);
    // Enter after `def f():` indents 4 spaces.
    await editCell(1, 'def f():\nreturn 1');
    assert((await cellText(page, 1)) === 'def f():\n    return 1', `body indented 4 spaces: ${JSON.stringify(await cellText(page, 1))}`);
    // Brackets and quotes close as they are typed; typing the closer steps over it.
    await editCell(1, 'print(');
    assert((await cellText(page, 1)) === 'print()', `bracket closed: ${await cellText(page, 1)}`);
    await page.keyboard.type('"hi")');
    assert((await cellText(page, 1)) === 'print("hi")', `typed over the closers: ${await cellText(page, 1)}`);
  });

  await t.test('find_and_replace_across_cells_and_saved', async () => {
    await open([['code', 'foo = 1'], ['markdown', '# Title\nno match here'], ['code', 'print(foo)']]);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+f');
    await page.waitForSelector('[data-testid=findbar]:not([hidden])');
    await page.keyboard.type('foo');
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === '1 of 2');
    assert((await page.$$('.cm-findMatch')).length === 2, 'both matches highlighted');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === '2 of 2');
    assert(await page.isVisible('.cell >> nth=2 >> .cm-findMatch-current'), 'the current match is in the third cell');
    // Case and regular expressions.
    await page.click('[data-testid=find-case]');
    await page.fill('[data-testid=find-input]', 'FOO');
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === 'No results');
    await page.click('[data-testid=find-case]');
    await page.waitForFunction(() => /^[12] of 2$/.test(document.querySelector('[data-testid=find-count]').textContent));
    await page.click('[data-testid=find-regex]');
    await page.fill('[data-testid=find-input]', 'f(o+)');
    await page.waitForFunction(() => /of 2$/.test(document.querySelector('[data-testid=find-count]').textContent));
    await page.fill('[data-testid=replace-input]', 'b$1');
    await shot(page, '32-find-replace');
    await page.click('[data-testid=replace-all]');
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === 'No results');
    assert((await cellText(page, 0)) === 'boo = 1' && (await cellText(page, 2)) === 'print(boo)', `both cells replaced: ${await cellText(page, 0)} / ${await cellText(page, 2)}`);
    // The saved notebook has it.
    let nb = null;
    for (let i = 0; i < 60; i++) {
      nb = JSON.parse((await rest(page, 'GET', fileUrl(state.projectId, NB))).body);
      if (nb.cells[0].source === 'boo = 1' && nb.cells[2].source === 'print(boo)') break;
      await page.waitForTimeout(250);
    }
    const srcs = nb.cells.map((c) => (Array.isArray(c.source) ? c.source.join('') : c.source));
    assert(srcs[0] === 'boo = 1' && srcs[2] === 'print(boo)' && srcs[1] === '# Title\nno match here', `saved: ${JSON.stringify(srcs)}`);
    // Esc closes the bar and the highlights.
    await page.keyboard.press('Escape');
    await page.waitForSelector('[data-testid=findbar]', { state: 'hidden' });
    assert((await page.$$('.cm-findMatch')).length === 0, 'highlights gone');
    // Replace one at a time, from the toolbar button.
    await page.click('[data-testid=open-find]');
    await page.click('[data-testid=find-regex]');   // back to plain text
    await page.fill('[data-testid=find-input]', 'boo');
    // The search starts at the selected cell (the third, where the last match was).
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === '2 of 2');
    assert(await page.isVisible('.cell >> nth=2 >> .cm-findMatch-current'), 'the current match is the selected cell\'s');
    await page.fill('[data-testid=replace-input]', 'qux');
    await page.click('[data-testid=replace-one]');
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === '1 of 1');
    assert((await cellText(page, 0)) === 'boo = 1' && (await cellText(page, 2)) === 'print(qux)', 'Replace changed only the current match');
    await page.keyboard.press('Escape');
    // In edit mode Ctrl+F opens the bar too, with the editor's selection as the query.
    await page.click('.cell >> nth=2 >> .cm-content');
    await page.keyboard.press('Home');
    for (let i = 0; i < 'print('.length; i++) await page.keyboard.press('ArrowRight');
    for (let i = 0; i < 'qux'.length; i++) await page.keyboard.press('Shift+ArrowRight');
    assert((await page.textContent('[data-testid=mode]')) === 'edit', 'editing the third cell');
    await page.keyboard.press('Control+f');
    await page.waitForSelector('[data-testid=findbar]:not([hidden])');
    assert((await page.inputValue('[data-testid=find-input]')) === 'qux', `the selection is the query: ${await page.inputValue('[data-testid=find-input]')}`);
    await page.waitForFunction(() => document.querySelector('[data-testid=find-count]').textContent === '1 of 1');
    await page.keyboard.press('Escape');
    await page.waitForSelector('[data-testid=findbar]', { state: 'hidden' });
    assert((await page.textContent('[data-testid=mode]')) === 'edit', 'closing the bar goes back to the editor');
  });

  await t.test('code_intel_leaves_no_kernel_running', async () => {
    await stopKernels(page);
    const live = JSON.parse((await t.fetchJson(page, '/api/v1/kernels')).body).items.filter((k) => k.status !== 'dead');
    assert(live.length === 0, `${live.length} kernels still running`);
  });
}
