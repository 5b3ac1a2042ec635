// Datasets in the web app (issue 15); screenshots 80-89. Through the pages
// only: "Datasets" in the top bar, "New dataset" (name, card, license, tags),
// a CSV and a PNG chosen in the draft's file input (setInputFiles), and a
// 20 MiB file whose second chunk is lost on the way back (the server stored
// it, the browser saw the connection break: page.route), which must go on
// from the server's offset to 100% without sending the file again and land
// with the sha256 computed here; publish v1; the CSV's preview table (column
// types, row count), the PNG's thumbnail; a file downloaded and compared; a
// second version; an upload cut off by going offline, resumed after the app
// is loaded again by choosing the same file (only the missing bytes sent).
// "Save output as dataset" on a finished job's page. Then the dataset attached in a notebook's side panel of a
// project of the module's own, read from a kernel cell at
// /home/aistudio/data/<owner>-<slug>/ (skipped, saying why, where the host
// cannot run kernels), and detached. The module deletes its project and
// dataset and leaves no kernel running.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

const MiB = 1 << 20;

// A CSV with a float, an int, a bool and a string column.
function irisCsv(rows) {
  const species = ['setosa', 'versicolor', 'virginica'];
  const lines = ['sepal_length,petals,wild,species'];
  for (let i = 0; i < rows; i++) lines.push(`${(4.3 + (i % 30) / 10).toFixed(1)},${i % 7},${i % 2 ? 'true' : 'false'},${species[i % 3]}`);
  return Buffer.from(lines.join('\n') + '\n');
}

// A w×h RGB PNG (a gradient), written by hand: signature, IHDR, IDAT, IEND.
function png(w, h) {
  const crcTable = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
  const crc = (buf) => { let c = 0xffffffff; for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;   // 8-bit RGB
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
    const o = y * (w * 3 + 1) + 1 + x * 3;
    raw[o] = (x * 255) / w; raw[o + 1] = (y * 255) / h; raw[o + 2] = 160;
  }
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

// Bytes that do not compress or repeat by chunk.
function bigFile(size, seed = 0x12345678) {
  const b = Buffer.alloc(size);
  let x = seed;
  for (let i = 0; i < size; i += 4) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; b.writeUInt32LE(x >>> 0, i); }
  return b;
}
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

// A ustar archive of [{name, data}] (regular files), written by hand.
function tarOf(files) {
  const parts = [];
  for (const f of files) {
    const hdr = Buffer.alloc(512);
    const put = (off, len, str) => hdr.write(str, off, len, 'ascii');
    put(0, 100, f.name);
    put(100, 8, '0000644\0'); put(108, 8, '0000000\0'); put(116, 8, '0000000\0');
    put(124, 12, f.data.length.toString(8).padStart(11, '0') + '\0');
    put(136, 12, Math.floor(Date.now() / 1000).toString(8).padStart(11, '0') + '\0');
    put(148, 8, '        '); put(156, 1, '0'); put(257, 6, 'ustar\0'); put(263, 2, '00');
    let sum = 0;
    for (const b of hdr) sum += b;
    put(148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
    parts.push(hdr, f.data, Buffer.alloc((512 - (f.data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

async function stopKernels(page) {
  return page.evaluate(async () => {
    const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
    const r = await fetch('/api/v1/kernels');
    if (!r.ok) return 0;
    const live = (await r.json()).items.filter((k) => k.status !== 'dead');
    for (const k of live) await fetch(`/api/v1/kernels/${k.id}`, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } });
    return live.length;
  });
}

// Until every kernel of the user is dead (a stopped kernel's mounts are in
// use until it is gone).
async function waitNoKernels(page) {
  for (let i = 0; i < 60; i++) {
    const live = await page.evaluate(async () => {
      const r = await fetch('/api/v1/kernels');
      return r.ok ? (await r.json()).items.filter((k) => k.status !== 'dead').length : 0;
    });
    if (!live) return;
    await page.waitForTimeout(500);
  }
  throw new Error('a kernel is still running 30 s after it was stopped');
}

export async function run(t) {
  const { page, assert, shot, rest } = t;

  await t.test('datasets_sha256_matches_node_crypto', async () => {
    // the incremental hash the upload worker uses, fed in uneven pieces
    const { Sha256 } = await import(new URL('../../../web/src/sha256.js', import.meta.url));
    for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 3 * MiB + 17]) {
      const d = bigFile(n + (4 - (n % 4)) % 4, 0x2545f491 + n).subarray(0, n);
      const h = new Sha256();
      for (let i = 0, k = 1; i < n; i += k, k = (k * 7 + 3) % 4099 + 1) h.update(d.subarray(i, i + k));
      assert(h.hex() === sha256(d), `sha256 of ${n} bytes`);
    }
  });
  const stamp = Date.now().toString(36);
  const name = `Iris e2e ${stamp}`;
  const slug = `iris-e2e-${stamp}`;
  const csv = irisCsv(30), pic = png(320, 200), big = bigFile(20 * MiB);
  let ds = null, pid = null;
  const me = async () => JSON.parse((await t.fetchJson(page, '/api/v1/me')).body);
  const draft = async () => JSON.parse((await t.fetchJson(page, `/api/v1/datasets/${ds.id}/draft`)).body).files;
  // The app's own navigation (the top bar's links), as a user moves around.
  // Waits for the new page: the router draws a new <main> when it is ready.
  const inApp = async (path) => {
    await page.evaluate((p) => {
      const old = document.getElementById('main');
      if (old) old.dataset.old = '1';
      history.pushState(null, '', p);
      dispatchEvent(new PopStateEvent('popstate'));
    }, path);
    await page.waitForSelector('main#main:not([data-old])');
  };

  await t.test('datasets_create_upload_resume_and_publish', async () => {
    await page.goto(`${t.base}/projects`);
    await page.click('nav a[href="/datasets"]');
    await page.waitForSelector('[data-testid=datasets]');
    await page.click('[data-testid=new-dataset-button]');
    await page.fill('[data-testid=ds-name]', name);
    assert(await page.inputValue('[data-testid=ds-slug]') === slug, 'the slug follows the name');
    await page.fill('[data-testid=ds-description]', `# Iris, for the e2e\n\nFour columns and **${30} rows**; a picture.`);
    await page.selectOption('[data-testid=ds-license]', 'CC0-1.0');
    await page.fill('[data-testid=ds-tags]', 'tabular, e2e');
    await shot(page, '80-datasets-new');
    await page.click('[data-testid=new-dataset-ok]');
    await page.waitForSelector('[data-testid=dataset-page]');
    const user = (await me()).username;
    assert(new URL(page.url()).pathname === `/datasets/${user}/${slug}`, `readable URL: ${page.url()}`);
    ds = { id: await page.getAttribute('[data-testid=dataset-page]', 'data-id'), owner: user, slug };
    await page.waitForSelector('[data-testid=ds-card-md] h1');
    assert((await page.textContent('[data-testid=ds-card-md] h1')).includes('Iris'), 'the card is rendered Markdown');
    assert((await page.textContent('[data-testid=ds-license-shown]')).includes('CC0-1.0'), 'license shown');

    // a CSV and a PNG through the file input
    await page.setInputFiles('[data-testid=ds-upload-input]', [
      { name: 'iris.csv', mimeType: 'text/csv', buffer: csv },
      { name: 'flower.png', mimeType: 'image/png', buffer: pic },
    ]);
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid=ds-upload]')];
      return rows.length === 2 && rows.every((r) => r.dataset.state === 'done');
    }, null, { timeout: 30000 });
    await page.waitForSelector('[data-testid=ds-draft-file][data-path="flower.png"]');

    // 20 MiB in 8 MiB chunks; the second chunk reaches the server but its
    // answer is lost (the connection "breaks"): the page must ask for the
    // offset and go on with the third chunk.
    let puts = 0, sent = 0, dropped = 0;
    await page.route('**/api/v1/uploads/*', async (route) => {
      const req = route.request();
      if (req.method() !== 'PUT') return route.continue();
      puts++;
      sent += (req.postDataBuffer() || Buffer.alloc(0)).length;
      if (puts === 2) {
        const res = await route.fetch();   // the server stores the chunk...
        assert(res.status() === 200, `chunk 2 stored: ${res.status()}`);
        dropped++;
        return route.abort('connectionreset');   // ...the browser never hears so
      }
      return route.continue();
    });
    await page.fill('[data-testid=ds-upload-dir]', 'raw');
    await page.setInputFiles('[data-testid=ds-upload-input]', { name: 'big.bin', mimeType: 'application/octet-stream', buffer: big }, { timeout: 60000 });
    await page.waitForSelector('[data-testid=ds-upload][data-path="raw/big.bin"][data-state=retrying]', { timeout: 30000 });
    await shot(page, '81-datasets-upload-retrying');
    await page.waitForSelector('[data-testid=ds-upload][data-path="raw/big.bin"][data-state=done]', { timeout: 60000 });
    await page.unroute('**/api/v1/uploads/*');
    assert(dropped === 1, 'one chunk was dropped');
    assert(puts === 3 && sent === big.length, `resumed from the server's offset: ${puts} PUTs, ${sent} bytes sent for ${big.length}`);
    assert(await page.$eval('[data-testid=ds-upload][data-path="raw/big.bin"] progress', (p) => p.value === p.max), 'the bar is at 100%');
    const files = await draft();
    const got = Object.fromEntries(files.map((f) => [f.path, f.sha256]));
    assert(got['raw/big.bin'] === sha256(big), `big.bin's sha256 on the server ${got['raw/big.bin']} is ${sha256(big)}`);
    assert(got['iris.csv'] === sha256(csv) && got['flower.png'] === sha256(pic), 'the small files arrived whole');
    await shot(page, '82-datasets-draft');

    await page.fill('[data-testid=ds-publish-message]', 'first version: iris and a flower');
    await page.click('[data-testid=ds-publish]');
    await page.waitForSelector('[data-testid=ds-version][data-number="1"]');
    assert((await page.textContent('[data-testid=ds-versions]')).includes('first version'), 'v1 listed with its message');
  });

  await t.test('datasets_preview_download_and_versions', async () => {
    assert(ds, 'the dataset exists');
    await inApp(`/datasets/${ds.owner}/${ds.slug}?v=1&f=iris.csv`);
    await page.waitForSelector('[data-testid=ds-file][data-path="iris.csv"].sel');
    // the preview is computed once per file: "computing…" (202) first, perhaps
    await page.waitForSelector('[data-testid=ds-preview-table]', { timeout: 60000 });
    const types = await page.$$eval('[data-testid=ds-coltype]', (els) => els.map((e) => e.textContent));
    assert(types.length === 4, `four columns: ${types}`);
    assert(/float|double|number/.test(types[0]) && /int/.test(types[1]) && /bool/.test(types[2]) && /str|text/.test(types[3]), `column types: ${types}`);
    assert(/\b30 rows/.test(await page.textContent('[data-testid=ds-row-count]')), 'the row count');
    await shot(page, '83-datasets-preview-table');

    await page.click('[data-testid=ds-file][data-path="flower.png"] button');
    await page.waitForSelector('[data-testid=ds-thumbnail]', { timeout: 60000 });
    await page.waitForFunction(() => { const i = document.querySelector('[data-testid=ds-thumbnail]'); return i && i.complete && i.naturalWidth > 0 && i.naturalWidth <= 256; });
    await shot(page, '84-datasets-preview-image');

    // download the CSV: a plain link the browser streams to disk
    await page.click('[data-testid=ds-file][data-path="iris.csv"] button');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=ds-download-file]')]);
    assert(dl.suggestedFilename() === 'iris.csv', `file name ${dl.suggestedFilename()}`);
    const bytes = readFileSync(await dl.path());
    assert(sha256(bytes) === sha256(csv), 'the downloaded CSV is the uploaded one');
    const [tar] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=ds-download-archive]')]);
    assert(tar.suggestedFilename() === `${ds.owner}-${ds.slug}-v1.tar`, `archive name ${tar.suggestedFilename()}`);
    assert(readFileSync(await tar.path()).length > big.length, 'the archive holds the version');

    // sharing: an unknown user is refused with the server's message, a real one is not
    await page.click('[data-testid=ds-share]');
    await page.fill('[data-testid=ds-share-user]', `nobody-${stamp}`);
    await page.click('[data-testid=share-dataset-ok]');
    await page.waitForSelector('[data-testid=ds-share-error] .error-box');
    await page.fill('[data-testid=ds-share-user]', t.ADMIN.username);
    await page.click('[data-testid=share-dataset-ok]');
    await page.waitForSelector('[data-testid=share-dataset]', { state: 'detached' });

    // the owner edits the card
    await page.click('[data-testid=ds-edit]');
    await page.fill('[data-testid=edit-dataset] [data-testid=ds-description]', '## Edited card\n\nNow with an archive.');
    await page.click('[data-testid=edit-dataset-ok]');
    await page.waitForSelector('[data-testid=ds-card-md] h2:has-text("Edited card")');

    // v2: remove the big file from the draft, add a .tar unpacked on publish; v1 is still there
    await page.click('[data-testid=ds-draft-file][data-path="raw/big.bin"] [data-testid=ds-draft-remove]');
    await page.waitForSelector('[data-testid=ds-draft-file][data-path="raw/big.bin"]', { state: 'detached' });
    const inner = Buffer.from('packed inside a tar\n');
    await page.setInputFiles('[data-testid=ds-upload-input]', { name: 'extra.tar', mimeType: 'application/x-tar', buffer: tarOf([{ name: 'inner/a.txt', data: inner }]) });
    await page.waitForSelector('[data-testid=ds-draft-file][data-path="extra.tar"]');
    await page.check('[data-testid=ds-unpack]');
    await page.fill('[data-testid=ds-publish-message]', 'without the big file');
    await page.click('[data-testid=ds-publish]');
    await page.waitForSelector('[data-testid=ds-version][data-number="2"]');
    const v2 = await page.$$eval('[data-testid=ds-file]', (els) => els.map((e) => e.dataset.path).sort());
    assert(v2.join(',') === 'flower.png,inner/a.txt,iris.csv', `v2 has the archive unpacked: ${v2}`);
    const rows = await page.$$eval('[data-testid=ds-versions] tbody tr', (trs) => trs.map((r) => r.dataset.version));
    assert(rows.join(',') === '2,1', `versions newest first: ${rows}`);
    // publishing an unchanged draft says why not
    await page.fill('[data-testid=ds-publish-message]', 'nothing new');
    await page.click('[data-testid=ds-publish]');
    await page.waitForSelector('[data-testid=ds-publish-error] .error-box');
    await shot(page, '85-datasets-versions');

    // the list finds it by its tag and by text
    await inApp('/datasets');
    await page.waitForSelector(`[data-testid=ds-card][data-slug="${ds.slug}"]`);
    await page.fill('[data-testid=ds-search]', `no-such-${stamp}`);
    await page.waitForSelector(`[data-testid=ds-card][data-slug="${ds.slug}"]`, { state: 'detached' });
    await page.fill('[data-testid=ds-search]', stamp);
    await page.waitForSelector(`[data-testid=ds-card][data-slug="${ds.slug}"]`);
    await page.click('[data-testid=ds-filter-mine]');
    await page.waitForSelector(`[data-testid=ds-card][data-slug="${ds.slug}"]`);
    await shot(page, '86-datasets-list');

    // the user it was shared with finds it under "Shared with me", read-only
    const actx = await t.browser.newContext({ viewport: { width: 1366, height: 820 } });
    try {
      const ap = await actx.newPage();
      ap.setDefaultTimeout(10000);
      await ap.goto(`${t.base}/login`);
      await ap.fill('input[name=username]', t.ADMIN.username);
      await ap.fill('input[name=password]', t.ADMIN.password);
      await ap.click('button[type=submit]');
      await ap.waitForURL('**/projects');
      await ap.click('nav a[href="/datasets"]');
      await ap.click('[data-testid=ds-filter-shared]');
      await ap.click(`[data-testid=ds-card][data-slug="${ds.slug}"]`);
      await ap.waitForSelector('[data-testid=ds-version]');
      assert(!(await ap.$('[data-testid=ds-draft-card]')) && !(await ap.$('[data-testid=ds-delete]')), 'a reader has no draft and no delete');
      assert(!/null|undefined|\[object/.test(await ap.textContent('[data-testid=dataset-page]')), 'nothing shows as null');
      await shot(ap, '86-datasets-shared-reader');
    } finally { await actx.close(); }
  });

  await t.test('datasets_upload_resumes_after_a_reload', async () => {
    assert(ds, 'the dataset exists');
    // a file on disk, so that choosing it again gives the same size and mtime
    const dir = mkdtempSync(join(tmpdir(), 'eddy-e2e-ds-'));
    const path = join(dir, 'again.bin');
    const again = bigFile(20 * MiB, 0x9e3779b9);
    writeFileSync(path, again);
    try {
      await inApp(`/datasets/${ds.owner}/${ds.slug}`);
      await page.waitForSelector('[data-testid=ds-upload-input]');
      // the first chunk arrives, then the network is gone
      let puts = 0;
      await page.route('**/api/v1/uploads/*', (route) => {
        if (route.request().method() !== 'PUT') return route.continue();
        return ++puts === 1 ? route.continue() : route.abort('internetdisconnected');
      });
      await page.fill('[data-testid=ds-upload-dir]', 'raw');
      await page.setInputFiles('[data-testid=ds-upload-input]', path);
      await page.waitForSelector('[data-testid=ds-upload][data-path="raw/again.bin"][data-state=retrying]', { timeout: 30000 });
      await page.unroute('**/api/v1/uploads/*');
      const saved = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('eddy.dsupload.')));
      assert(saved.length === 1 && saved[0].endsWith(':raw/again.bin'), `the upload is remembered: ${saved}`);
      // the app loaded afresh (a reload), the same file chosen again
      await page.goto(`${t.base}/projects`);
      await page.waitForSelector('[data-testid=projects]');
      await inApp(`/datasets/${ds.owner}/${ds.slug}`);
      await page.waitForSelector('[data-testid=ds-upload-input]');
      // the page lists the interrupted upload with what the server holds
      await page.waitForSelector('[data-testid=ds-pending-upload][data-path="raw/again.bin"]');
      assert(/8 MiB of 20 MiB/.test(await page.textContent('[data-testid=ds-pending-upload][data-path="raw/again.bin"]')), 'the interrupted upload shows its offset');
      await shot(page, '81-datasets-upload-interrupted');
      let sent = 0;
      await page.route('**/api/v1/uploads/*', (route) => {
        const req = route.request();
        if (req.method() === 'PUT') sent += (req.postDataBuffer() || Buffer.alloc(0)).length;
        return route.continue();
      });
      // chosen again without typing its folder: it goes where it was going
      await page.setInputFiles('[data-testid=ds-upload-input]', path);
      await page.waitForSelector('[data-testid=ds-upload][data-path="raw/again.bin"][data-state=done]', { timeout: 60000 });
      assert(!(await page.$('[data-testid=ds-pending-upload][data-path="raw/again.bin"]')), 'the interrupted row gives way to the upload');
      await page.unroute('**/api/v1/uploads/*');
      assert(sent === again.length - 8 * MiB, `only the missing bytes went: ${sent} of ${again.length}`);
      assert(/resumed at 8 MiB/.test(await page.textContent('[data-testid=ds-upload][data-path="raw/again.bin"]')), 'the row says where it resumed');
      const f = (await draft()).find((x) => x.path === 'raw/again.bin');
      assert(f && f.sha256 === sha256(again), `again.bin arrived whole: ${JSON.stringify(f)}`);
      const left = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('eddy.dsupload.')));
      assert(left.length === 0, `a finished upload is forgotten: ${left}`);
      await shot(page, '81-datasets-upload-resumed');
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });

  await t.test('datasets_attach_read_in_a_kernel_and_detach', async () => {
    assert(ds, 'the dataset exists');
    const r = await rest(page, 'POST', '/api/v1/projects', { name: `datasets-${stamp}`, visibility: 'private' });
    assert(r.status === 201, `POST project ${r.status}: ${r.body}`);
    pid = JSON.parse(r.body).id;
    const mount = `/home/aistudio/data/${ds.owner}-${ds.slug}`;
    const code = `import os\nprint(os.environ.get('EDDY_DATASETS'))\nprint(open('${mount}/iris.csv').readline().strip())\nprint(sorted(os.listdir('${mount}')))`;
    const nb = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [{ cell_type: 'code', id: 'read', metadata: {}, source: code, outputs: [], execution_count: null }] };
    const w = await rest(page, 'PUT', t.fileUrl(pid, 'data.ipynb'), JSON.stringify(nb));
    assert(w.status === 201, `PUT notebook ${w.status}`);
    await page.goto(`${t.base}/projects/${encodeURIComponent(pid)}/notebook/data.ipynb`);
    await page.waitForSelector('.cell .cm-content');
    if (await page.$('[data-testid=side-panel].collapsed')) await page.click('[data-testid=side-panel-toggle]');
    if (await page.$('[data-testid=side-datasets].folded')) await page.click('[data-testid=side-datasets-head]');
    await page.waitForSelector('[data-testid=side-datasets-list] li');
    await page.click('[data-testid=dsp-attach]');
    await page.fill('[data-testid=dsp-search]', ds.slug);
    await page.click(`[data-testid=dsp-pick][data-slug="${ds.slug}"]`);
    await page.waitForSelector('[data-testid=dsp-version] option[value="1"]', { state: 'attached' });
    await page.click('[data-testid=dsp-attach-ok]');
    await page.waitForSelector(`[data-testid=dsp-item][data-dataset="${ds.id}"]`);
    assert((await page.textContent(`[data-testid=dsp-item][data-dataset="${ds.id}"] [data-testid=dsp-path]`)).startsWith(mount), 'the mount path is shown');
    const att = JSON.parse((await t.fetchJson(page, `/api/v1/projects/${pid}/datasets`)).body).items;
    assert(att.length === 1 && att[0].dataset_id === ds.id && att[0].version === 'latest', `attached: ${JSON.stringify(att)}`);
    await shot(page, '88-datasets-side-panel');

    // read it from a kernel (the module's own project: its notebook only)
    let skip = null;
    await stopKernels(page);
    await page.click('.cell .cm-content');
    await page.click('[data-testid=run]');
    try {
      await page.waitForSelector('.cell .outputs pre', { timeout: 90000 });
      await page.waitForFunction(() => /\]\s*$|Error/.test(document.querySelector('.cell .outputs')?.textContent || ''), null, { timeout: 30000 });
    } catch (e) {
      const status = await page.textContent('[data-testid=kernel-status]').catch(() => '?');
      await shot(page, '88-datasets-kernel-none');
      // a host that cannot run kernels says so in the kernel's state; anything else is a failure
      if (!/dead|fail|error|unavailable|cannot/i.test(status)) throw new Error(`the cell did not run: kernel "${status}" (${e.message})`);
      skip = `this host cannot run kernels (kernel: ${status})`;
    }
    if (!skip) {
      const text = await page.textContent('.cell .outputs');
      await shot(page, '88-datasets-kernel-reads');
      assert(text.includes('sepal_length,petals,wild,species'), `the kernel read the CSV: ${text}`);
      // what the latest version holds at its top level, as Python's sorted(os.listdir()) prints it
      const latest = JSON.parse((await t.fetchJson(page, `/api/v1/datasets/${ds.id}/versions/latest`)).body);
      const top = [...new Set(latest.files.map((f) => f.path.split('/')[0]))].sort();
      const listing = `[${top.map((n) => `'${n}'`).join(', ')}]`;
      assert(text.includes(`"version":${latest.number}`) && text.includes(`${ds.owner}/${ds.slug}`) && text.includes(listing), `EDDY_DATASETS and the listing ${listing}: ${text}`);
      // the running kernel mounts the latest version: deleting it is refused, and the page says why
      const nbUrl = page.url();
      await inApp(`/datasets/${ds.owner}/${ds.slug}`);
      await page.click(`[data-testid=ds-version-delete-${latest.number}]`);
      await page.click('[data-testid=ds-version-delete-confirm]');
      await page.waitForSelector('[data-testid=ds-refused] .error-box:has-text("Not deleted")');
      assert(/in use|kernel/i.test(await page.textContent('[data-testid=ds-refused]')), 'the reason names what uses it');
      await shot(page, '88-datasets-version-in-use');
      await page.goto(nbUrl);
      await page.waitForSelector(`[data-testid=dsp-item][data-dataset="${ds.id}"]`);
    }
    await stopKernels(page);
    await waitNoKernels(page);

    await page.click(`[data-testid=dsp-item][data-dataset="${ds.id}"] [data-testid=dsp-detach]`);
    await page.waitForSelector(`[data-testid=dsp-item][data-dataset="${ds.id}"]`, { state: 'detached' });
    const after = JSON.parse((await t.fetchJson(page, `/api/v1/projects/${pid}/datasets`)).body).items;
    assert(after.length === 0, `detached: ${JSON.stringify(after)}`);
    if (skip) return { skip };
  });

  await t.test('datasets_save_job_output_as_a_dataset', async () => {
    assert(pid, 'the module made its project');
    const code = 'import os\nout = os.environ.get("EDDY_OUTPUT_DIR", ".")\nos.makedirs(os.path.join(out, "preds"), exist_ok=True)\nopen(os.path.join(out, "preds", "a.csv"), "w").write("id,p\\n1,0.5\\n")\nopen(os.path.join(out, "model.txt"), "w").write("weights\\n")\n';
    const w = await rest(page, 'PUT', t.fileUrl(pid, 'make.py'), code);
    assert(w.status === 201 || w.status === 200, `PUT make.py ${w.status}`);
    const j = await rest(page, 'POST', '/api/v1/jobs', { project_id: pid, entry: 'make.py', resource: 'cpu-basic' });
    assert(j.status === 201 || j.status === 202, `POST job ${j.status}: ${j.body}`);
    const job = JSON.parse(j.body);
    await page.goto(`${t.base}/jobs/${job.id}`);
    await page.waitForSelector('.badge:has-text("succeeded")', { timeout: 60000 });
    await page.waitForSelector('[data-testid=save-ds]', { timeout: 15000 });
    const dsName = `job output ${stamp}`;
    await page.fill('[data-testid=save-ds-name]', dsName);
    await page.fill('[data-testid=save-ds-message]', 'predictions of the e2e job');
    await page.click('[data-testid=save-ds]');
    await page.waitForSelector('[data-testid=save-ds-link]', { timeout: 20000 });
    await shot(page, '87-datasets-from-job');
    await page.click('[data-testid=save-ds-link]');
    await page.waitForSelector('[data-testid=ds-version][data-number="1"]');
    const paths = await page.$$eval('[data-testid=ds-file]', (els) => els.map((e) => e.dataset.path).sort());
    assert(paths.includes('model.txt') && paths.includes('preds/a.csv'), `the job's files: ${paths}`);
    assert(/job #/.test(await page.textContent('[data-testid=ds-versions]')), 'the version names its job');
    const id = await page.getAttribute('[data-testid=dataset-page]', 'data-id');
    await rest(page, 'DELETE', `/api/v1/datasets/${id}`);
  });

  await t.test('datasets_save_project_files_as_a_dataset', async () => {
    assert(pid, 'the module made its project');
    await page.goto(`${t.base}/projects/${encodeURIComponent(pid)}`);
    await page.waitForSelector('[data-testid=save-ds]', { timeout: 15000 });
    assert((await page.textContent('[data-testid=save-ds]')).includes('Save files as dataset'), 'the project button');
    await page.fill('[data-testid=save-ds-name]', `project files ${stamp}`);
    await page.click('[data-testid=save-ds]');
    await page.waitForSelector('[data-testid=save-ds-link]', { timeout: 20000 });
    await page.click('[data-testid=save-ds-link]');
    await page.waitForSelector('[data-testid=ds-version][data-number="1"]');
    const paths = await page.$$eval('[data-testid=ds-file]', (els) => els.map((e) => e.dataset.path));
    assert(paths.includes('make.py'), `the project's files: ${paths}`);
    assert(!paths.some((x) => x.startsWith('.git/')), 'no .git');
    const id = await page.getAttribute('[data-testid=dataset-page]', 'data-id');
    await rest(page, 'DELETE', `/api/v1/datasets/${id}`);
  });

  await t.test('datasets_large_version_tree_opens_folders_on_demand', async () => {
    // 250 files in 5 folders (through the API): too many to open every folder
    const c = await rest(page, 'POST', '/api/v1/datasets', { name: `many ${stamp}`, visibility: 'private' });
    assert(c.status === 201, `POST dataset ${c.status}: ${c.body}`);
    const many = JSON.parse(c.body);
    try {
      const puts = await page.evaluate(async (id) => {
        const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
        const bad = [];
        for (let i = 0; i < 250; i += 25) {
          await Promise.all(Array.from({ length: 25 }, async (_, k) => {
            const n = i + k;
            const r = await fetch(`/api/v1/datasets/${id}/draft/files/part${n % 5}/f${n}.txt`, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: `file ${n}\n` });
            if (!r.ok) bad.push(`${n}: ${r.status}`);
          }));
        }
        return bad;
      }, many.id);
      assert(puts.length === 0, `draft PUTs: ${puts}`);
      const v = await rest(page, 'POST', `/api/v1/datasets/${many.id}/versions`, { message: 'many files' });
      assert(v.status === 201, `publish ${v.status}: ${v.body}`);
      await inApp(`/datasets/${many.owner}/${many.slug}?v=1&f=part3/f8.txt`);
      await page.waitForSelector('[data-testid=ds-file][data-path="part3/f8.txt"].sel');
      assert(await page.getAttribute('.ds-dir[data-path="part3"]', 'aria-expanded') === 'true', 'the asked-for file\'s folder is open');
      assert(await page.getAttribute('.ds-dir[data-path="part1"]', 'aria-expanded') === 'false', 'other folders start closed');
      assert(!(await page.$('[data-testid=ds-file][data-path="part1/f1.txt"]')), 'a closed folder has no rows yet');
      await page.click('.ds-dir[data-path="part1"] > button');
      await page.waitForSelector('[data-testid=ds-file][data-path="part1/f1.txt"]');
      assert((await page.$$('.ds-dir[data-path="part1"] [data-testid=ds-file]')).length === 50, 'an opened folder lists its 50 files');
      await page.waitForSelector('[data-testid=ds-preview-text]', { timeout: 60000 });
      assert((await page.textContent('[data-testid=ds-preview-text]')).includes('file 8'), 'a text file\'s head');
      await shot(page, '86-datasets-many-files');
    } finally { await rest(page, 'DELETE', `/api/v1/datasets/${many.id}`); }
  });

  await t.test('datasets_delete_from_the_page', async () => {
    assert(ds, 'the dataset exists');
    await inApp(`/datasets/${ds.owner}/${ds.slug}`);
    await page.waitForSelector('[data-testid=ds-delete]');
    await page.click('[data-testid=ds-delete]');
    await page.click('[data-testid=ds-delete-confirm]');
    await page.waitForSelector('[data-testid=datasets]');
    assert((await t.fetchJson(page, `/api/v1/datasets/${ds.id}`)).status === 404, 'the dataset is gone');
    await shot(page, '89-datasets-deleted');
    if (pid) await rest(page, 'DELETE', `/api/v1/projects/${pid}`);
  });
}
