// Images in Markdown cells (nbformat attachments, issue 14); screenshots
// 65a-65c. A notebook saved by Jupyter with attachments renders them in the
// editor (image/* only: an attachment of another type, or one the cell does
// not have, shows no image); an image pasted into a Markdown cell being
// edited becomes one of its attachments (as in JupyterLab), is saved in the
// file and renders again after a reload; an attachment no longer referenced
// is dropped when the cell is rendered.

// A 1x1 red PNG, a 96x48 blue one and a 160x48 SVG.
const DOT = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const BLUE = 'iVBORw0KGgoAAAANSUhEUgAAAGAAAAAwCAIAAABhdOiYAAAAVklEQVR42u3QQQkAAAgEsItjOmObwwb+hcESLNXDIQoECRIkSJAgQYIQJEiQIEGCBAlCkCBBggQJEiQIQYIECRIkSJAgQQgSJEiQIEGCBCFIkCBBgn5Yhoq5hxCs6yIAAAAASUVORK5CYII=';
const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="48"><rect width="160" height="48" rx="6" fill="#3a7"/><text x="80" y="30" font-size="16" text-anchor="middle" fill="#fff">from Jupyter</text></svg>';

const NB = {
  nbformat: 4, nbformat_minor: 5,
  metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
  cells: [
    { cell_type: 'markdown', id: 'att', metadata: {},
      source: ['# Pasted in Jupyter\n', '\n', '![dot](attachment:dot.png) ![shape](attachment:shape.svg)\n',
        '![page](attachment:page.html) ![missing](attachment:nope.png)'],
      attachments: { 'dot.png': { 'image/png': DOT }, 'shape.svg': { 'image/svg+xml': [SVG] },
        'page.html': { 'text/html': '<script>document.title="pwned"</script>' } } },
    { cell_type: 'code', id: 'code', metadata: {}, execution_count: null, source: 'x = 1', outputs: [] },
  ],
};

const loaded = (page, sel, width) => page.waitForFunction(({ sel, width }) => {
  const i = document.querySelector(sel);
  return i && i.complete && i.naturalWidth === width;
}, { sel, width });

export async function run(t) {
  const { page, state, assert, shot, rest, fileUrl, fetchJson } = t;
  const url = `${state.projectUrl}/notebook/attachments.ipynb`;
  const saved = async () => JSON.parse((await fetchJson(page, fileUrl(state.projectId, 'attachments.ipynb'))).body);

  await t.test('markdown_attachments_saved_by_jupyter_render_in_the_editor', async () => {
    const r = await rest(page, 'PUT', fileUrl(state.projectId, 'attachments.ipynb'), JSON.stringify(NB, null, 1));
    assert(r.status === 200 || r.status === 201, `PUT the notebook: ${r.status} ${r.body}`);
    await page.goto(url);
    await page.waitForSelector('.cell[data-cell-id=att] .markdown h1');
    await loaded(page, '.cell[data-cell-id=att] .markdown img[alt=dot]', 1);
    await loaded(page, '.cell[data-cell-id=att] .markdown img[alt=shape]', 160);
    const srcs = await page.$$eval('.cell[data-cell-id=att] .markdown img', (l) => Object.fromEntries(l.map((i) => [i.alt, i.getAttribute('src')])));
    assert(srcs.dot === `data:image/png;base64,${DOT}`, `the PNG attachment as a data: URL: ${srcs.dot}`);
    assert(srcs.shape.startsWith('data:image/svg+xml'), `the SVG attachment: ${srcs.shape}`);
    assert(!srcs.page || !srcs.page.startsWith('data:'), `an attachment that is not an image shows nothing: ${srcs.page}`);
    assert(!srcs.missing || !srcs.missing.startsWith('data:'), `a missing attachment shows nothing: ${srcs.missing}`);
    assert(await page.title() !== 'pwned', 'no script ran');
    await shot(page, '65a-attachments-from-jupyter');
  });

  await t.test('paste_an_image_into_a_markdown_cell_attaches_it', async () => {
    if (!page.url().endsWith('/attachments.ipynb')) {
      await page.goto(url);
      await page.waitForSelector('.cell[data-cell-id=att] .markdown h1');
    }
    await page.dblclick('.cell[data-cell-id=att] .markdown h1');
    await page.waitForSelector('.cell[data-cell-id=att] .cm-content');
    await page.click('.cell[data-cell-id=att] .cm-content');
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\n\nBlue: ');
    // what a browser hands a page when an image is pasted (a screenshot
    // copied to the clipboard arrives as a file named image.png)
    const handled = await page.evaluate((b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'image.png', { type: 'image/png' }));
      const ev = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
      document.querySelector('.cell[data-cell-id=att] .cm-content').dispatchEvent(ev);
      return ev.defaultPrevented;
    }, BLUE);
    assert(handled, 'the editor took the pasted image');
    await page.waitForFunction(() => document.querySelector('.cell[data-cell-id=att] .cm-content').textContent.includes('Blue: ![image.png](attachment:image.png)'));
    await page.keyboard.press('Escape');
    await loaded(page, '.cell[data-cell-id=att] .markdown img[alt="image.png"]', 96);
    await loaded(page, '.cell[data-cell-id=att] .markdown img[alt=dot]', 1);
    await shot(page, '65b-attachment-pasted');
    // saved into the notebook as nbformat wants it
    let nb = null;
    for (let i = 0; i < 50; i++) {
      nb = await saved();
      if (nb.cells[0].attachments?.['image.png']) break;
      await page.waitForTimeout(200);
    }
    const att = nb.cells[0].attachments || {};
    assert(att['image.png'] && att['image.png']['image/png'] === BLUE, `the pasted image is an attachment: ${JSON.stringify(Object.keys(att))}`);
    assert(att['dot.png'] && att['shape.svg'], 'the attachments from Jupyter are kept');
    assert(nb.cells[0].source.includes('![image.png](attachment:image.png)'), 'the reference is in the source');

    // after a reload it renders from the file
    await page.reload();
    await loaded(page, '.cell[data-cell-id=att] .markdown img[alt="image.png"]', 96);

    // a reference removed: its attachment goes when the cell is rendered
    await page.dblclick('.cell[data-cell-id=att] .markdown h1');
    await page.click('.cell[data-cell-id=att] .cm-content');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('# Only blue\n\n![blue](attachment:image.png)');
    await page.keyboard.press('Escape');
    await loaded(page, '.cell[data-cell-id=att] .markdown img[alt=blue]', 96);
    for (let i = 0; i < 50; i++) {
      nb = await saved();
      if (!nb.cells[0].attachments?.['dot.png'] && nb.cells[0].source.startsWith('# Only blue')) break;
      await page.waitForTimeout(200);
    }
    assert(JSON.stringify(Object.keys(nb.cells[0].attachments || {})) === '["image.png"]', `only the referenced attachment is kept: ${JSON.stringify(Object.keys(nb.cells[0].attachments || {}))}`);
    await shot(page, '65c-attachment-after-reload');
  });
}
