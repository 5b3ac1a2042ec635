// Competitions in the web app (issue 16, item 10); screenshots 90-99.
// The admin (a host by being an admin) makes a public dataset through the
// REST API, then through the pages: "Host a competition", a contradictory
// timeline refused with the server's message next to the field it names, the
// competition created, the ground truth uploaded (its rows shown, never its
// content; a canary label in it). The participant (USER): the list (Active),
// the competition's page, "My submissions" asks for the rules first, "I
// accept", a good CSV chosen in the file input and scored, a bad one (a
// duplicate id) shown invalid with the validator's message (the line), not
// counted; the public leaderboard with their team highlighted; the private
// board not offered before the end; the canary on no page they saw. The
// host's tab lists both submissions. Skipped, saying why, where the server
// has no competitions routes yet. The competition and its dataset are left
// (there is no route that deletes a competition).

const TRUTH_ROWS = 40;
const labels = (i) => (i % 3 === 0 ? 'cat' : 'dog');

export async function run(t) {
  const { page, assert, shot, rest, base, browser, ADMIN, USER } = t;
  const stamp = Date.now().toString(36);
  const canary = `CANARY-${stamp}-e2e`;
  const slug = `e2e-comp-${stamp}`;
  let ap = null, actx = null, skip = null, comp = null;
  const iso = (ms) => new Date(ms).toISOString().slice(0, 19);   // a datetime-local value (UTC)
  const csv = (rows) => Buffer.from(rows.join('\n') + '\n');
  // The truth: ids 1..40, "cat"/"dog", one row labelled with the canary.
  const truth = csv(['id,label', ...Array.from({ length: TRUTH_ROWS }, (_, k) => `${k + 1},${k === 6 ? canary : labels(k + 1)}`)]);
  // A good submission: right but for every tenth row.
  const good = csv(['id,label', ...Array.from({ length: TRUTH_ROWS }, (_, k) => `${k + 1},${(k + 1) % 10 === 0 ? 'bird' : labels(k + 1)}`)]);
  // A bad one: id 3 twice (and 39 rows of ids).
  const bad = csv(['id,label', ...Array.from({ length: TRUTH_ROWS }, (_, k) => `${k === 5 ? 3 : k + 1},${labels(k + 1)}`)]);
  const seen = [];   // the text of every page the participant saw
  const keep = async () => seen.push(await page.textContent('body'));

  await t.test('competitions_host_creates_and_uploads_truth', async () => {
    const probe = await rest(page, 'GET', '/api/v1/competitions');
    if (probe.status === 404 && /no route for/i.test(probe.body)) { skip = 'the server has no competitions routes yet'; return { skip }; }
    assert(probe.status === 200, `GET /api/v1/competitions: ${probe.status} ${probe.body}`);
    actx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    ap = await actx.newPage();
    ap.setDefaultTimeout(15000);
    await ap.goto(`${base}/login`);
    await ap.fill('input[name=username]', ADMIN.username);
    await ap.fill('input[name=password]', ADMIN.password);
    await ap.click('button[type=submit]');
    await ap.waitForURL('**/projects');

    // The data participants download: a public dataset, v1.
    let r = await rest(ap, 'POST', '/api/v1/datasets', { name: `Pets ${stamp}`, slug: `pets-${stamp}`, visibility: 'public', description: 'Pets for the competition e2e' });
    assert(r.status === 201, `create dataset: ${r.status} ${r.body}`);
    const ds = JSON.parse(r.body);
    r = await rest(ap, 'PUT', `/api/v1/datasets/${ds.id}/draft/files/test.csv`, ['id', ...Array.from({ length: TRUTH_ROWS }, (_, k) => String(k + 1))].join('\n') + '\n', { 'Content-Type': 'text/csv' });
    assert(r.status === 200 || r.status === 201, `draft file: ${r.status} ${r.body}`);
    r = await rest(ap, 'POST', `/api/v1/datasets/${ds.id}/versions`, { message: 'v1' });
    assert(r.status === 201 || r.status === 200, `publish: ${r.status} ${r.body}`);

    await ap.click('nav a[href="/competitions"]');
    await ap.waitForSelector('[data-testid=competitions]');
    await ap.click('[data-testid=comp-new]');
    await ap.waitForSelector('[data-testid=comp-form]');
    const now = Date.now();
    await ap.fill('[data-testid=comp-f-title]', `Cats and dogs ${stamp}`);
    await ap.fill('[data-testid=comp-f-slug]', slug);
    await ap.fill('[data-testid=comp-f-overview]', '# Cats and dogs\n\nTell the **cats** from the dogs. Scored by accuracy.');
    await ap.fill('[data-testid=comp-f-rules]', '1. One account per person.\n2. No hand labelling.\n3. Teams of up to 3.');
    await ap.waitForSelector(`[data-testid=comp-f-dataset] option[value="${ds.id}"]`, { state: 'attached' });
    await ap.selectOption('[data-testid=comp-f-dataset]', ds.id);
    await ap.fill('[data-testid=comp-f-version]', '1');
    await ap.fill('[data-testid=comp-f-id_column]', 'id');
    await ap.fill('[data-testid=comp-f-target_columns]', 'label');
    await ap.selectOption('[data-testid=comp-f-metric]', 'accuracy');
    await ap.fill('[data-testid=comp-f-public_fraction]', '0.5');
    await ap.selectOption('[data-testid=comp-f-leaderboard]', 'public');
    await ap.fill('[data-testid=comp-f-daily_cap]', '5');
    await ap.fill('[data-testid=comp-f-max_team_size]', '3');
    // A timeline out of order first: the end before the start.
    const start = now + 15000;
    await ap.fill('[data-testid=comp-f-start_at]', iso(start));
    await ap.fill('[data-testid=comp-f-merge_deadline]', iso(now + 30 * 60000));
    await ap.fill('[data-testid=comp-f-selection_deadline]', iso(now + 50 * 60000));
    await ap.fill('[data-testid=comp-f-end_at]', iso(now + 10000));
    await ap.click('[data-testid=comp-create]');
    await ap.waitForSelector('[data-testid=comp-form-error] .error-box');
    const fieldErr = await ap.$$eval('.comp-field-error', (els) => els.filter((e) => e.textContent).map((e) => [e.closest('[data-field]').dataset.field, e.textContent]));
    assert(fieldErr.length === 1, `one field shows the server's message: ${JSON.stringify(fieldErr)}`);
    assert(/_at|deadline/.test(fieldErr[0][0]) && /end_at|deadline/.test(fieldErr[0][1]), `the message is next to a timeline field: ${JSON.stringify(fieldErr)}`);
    await shot(ap, '90-comp-form-refused');
    await ap.fill('[data-testid=comp-f-end_at]', iso(now + 60 * 60000));
    await ap.click('[data-testid=comp-create]');
    await ap.waitForSelector('[data-testid=comp-truth]');
    assert(new URL(ap.url()).pathname === `/competitions/${slug}/host`, `lands on the host tab: ${ap.url()}`);
    r = await rest(ap, 'GET', `/api/v1/competitions/${slug}`);
    comp = JSON.parse(r.body);
    comp.startMs = Date.parse(comp.start_at);
    assert(comp.metric === 'accuracy' && comp.dataset && comp.dataset.dataset_id === ds.id, `stored as filled in: ${r.body}`);
    assert(Math.abs(comp.startMs - Math.floor(start / 1000) * 1000) < 1000, `start_at is the UTC time typed: ${comp.start_at}`);

    // The truth, through the file input.
    await ap.setInputFiles('[data-testid=comp-truth-file]', { name: 'truth.csv', mimeType: 'text/csv', buffer: truth });
    await ap.click('[data-testid=comp-truth-upload]');
    await ap.waitForSelector(`[data-testid=comp-truth-status]:has-text("${TRUTH_ROWS} rows")`);
    assert(!(await ap.content()).includes(canary), 'the truth is not shown back to the host');
    await shot(ap, '91-comp-host-truth');
  });

  await t.test('competitions_participant_accepts_rules_submits_and_sees_board', async () => {
    if (skip || !comp) return { skip: skip || 'no competition was created' };
    // Submissions open at the start.
    const wait = comp.startMs - Date.now() + 500;
    if (wait > 0) await page.waitForTimeout(wait);
    await page.goto(`${base}/projects`);
    await page.click('nav a[href="/competitions"]');
    await page.waitForSelector(`[data-testid=comp-group-active] [data-slug="${slug}"]`);
    await keep();
    await shot(page, '92-comp-list');
    await page.click(`[data-testid=comp-group-active] [data-slug="${slug}"]`);
    await page.waitForSelector('[data-testid=comp-overview-md] h1');
    await keep();

    // No submitting before the rules are accepted.
    await page.click('[data-testid=comp-tab-submissions]');
    await page.waitForSelector('[data-testid=comp-need-rules]');
    assert(!(await page.$('[data-testid=comp-submit-file]')), 'no file input before the rules are accepted');
    await page.click('[data-testid=comp-need-rules] a');
    await page.waitForSelector('[data-testid=comp-rules-md] ol');
    await page.click('[data-testid=comp-accept-rules]');
    await page.waitForSelector('[data-testid=comp-rules-accepted]');
    await keep();
    await shot(page, '93-comp-rules-accepted');

    // A good CSV, then a bad one.
    await page.click('[data-testid=comp-tab-submissions]');
    await page.setInputFiles('[data-testid=comp-submit-file]', { name: 'good.csv', mimeType: 'text/csv', buffer: good });
    await page.click('[data-testid=comp-submit]');
    await page.waitForSelector('[data-testid=comp-submit-ok]');
    await page.waitForSelector('[data-testid=comp-sub-row][data-status=scored]', { timeout: 30000 });
    const score = Number(await page.textContent('[data-testid=comp-sub-row][data-status=scored] [data-testid=comp-sub-score]'));
    assert(score > 0.7 && score <= 1, `a public score near 0.9: ${score}`);
    await page.setInputFiles('[data-testid=comp-submit-file]', { name: 'bad.csv', mimeType: 'text/csv', buffer: bad });
    await page.click('[data-testid=comp-submit]');
    await page.waitForSelector('[data-testid=comp-sub-row][data-status=invalid] [data-testid=comp-sub-error]', { timeout: 30000 });
    const err = await page.textContent('[data-testid=comp-sub-row][data-status=invalid] [data-testid=comp-sub-error]');
    assert(/duplicate id '3'/.test(err) && /line/.test(err), `the validator's words, with the line: ${err}`);
    assert(/not counted/.test(await page.textContent('[data-testid=comp-sub-row][data-status=invalid]')), 'an invalid submission does not count');
    assert(/1 of 5 submissions used today/.test(await page.textContent('[data-testid=comp-caps]')), `caps: ${await page.textContent('[data-testid=comp-caps]')}`);
    // The scored one chosen for the final ranking; the invalid one cannot be.
    assert(await page.isDisabled('[data-testid=comp-sub-row][data-status=invalid] [data-testid=comp-select]'), 'an invalid submission cannot be selected');
    await page.check('[data-testid=comp-sub-row][data-status=scored] [data-testid=comp-select]');
    await page.click('[data-testid=comp-save-selection]');
    await page.waitForSelector('.toast:has-text("Final selection saved (1 of 2)")');
    const mine = JSON.parse((await rest(page, 'GET', `/api/v1/competitions/${comp.id}/submissions`)).body).items;
    assert(mine.filter((x) => x.selected).map((x) => x.status).join() === 'scored', `the selection is stored: ${JSON.stringify(mine)}`);
    await keep();
    await shot(page, '94-comp-submissions');

    // The public board: the participant's team, highlighted; no private board yet.
    await page.click('[data-testid=comp-tab-leaderboard]');
    await page.waitForSelector('[data-testid=comp-board-row].comp-mine');
    const row = await page.textContent('[data-testid=comp-board-row].comp-mine');
    assert(row.includes(USER.username) || /your team/.test(row), `my team's row: ${row}`);
    assert(await page.isDisabled('[data-testid=comp-board-private]'), 'the private board waits for the end');
    await keep();
    await shot(page, '95-comp-leaderboard');

    // The team of one the first submission made; it cannot be left now (the server says why).
    await page.click('[data-testid=comp-tab-team]');
    await page.waitForSelector('[data-testid=comp-my-team]');
    const members = await page.$$eval('[data-testid=comp-member]', (rs) => rs.map((r) => r.textContent.trim()));
    assert(JSON.stringify(members) === JSON.stringify([USER.username]), `a team of one: ${members}`);
    await page.click('[data-testid=comp-leave]');
    const refusal = await (await page.waitForSelector('.toast.error')).textContent();
    assert(/submi/i.test(refusal), `leaving is refused, saying why: ${refusal}`);
    await keep();
    await shot(page, '97-comp-team');

    // The data tab: the dataset, its download.
    await page.click('[data-testid=comp-tab-data]');
    await page.waitForSelector('[data-testid=comp-dataset-link]');
    const href = await page.getAttribute('[data-testid=comp-download]', 'href');
    const dl = await rest(page, 'GET', href);
    assert(dl.status === 200, `the data downloads: ${dl.status}`);
    await keep();

    for (const text of seen) assert(!text.includes(canary), 'the canary label is on no page the participant saw');
    const subs = await rest(page, 'GET', `/api/v1/competitions/${comp.id}/submissions`);
    assert(!subs.body.includes(canary) && !subs.body.includes('private_score'), 'nor in the submissions the page read');
  });

  // A second competition, made through the API with a short timeline and a
  // hidden board: refused (with the reason) while it runs, then the private
  // board after the end, offered first.
  await t.test('competitions_hidden_board_then_private_after_the_end', async () => {
    if (skip || !comp || !ap) return { skip: skip || 'no competition was created' };
    const now = Date.now(), s2 = `${slug}-hidden`;
    const at = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    let r = await rest(ap, 'POST', '/api/v1/competitions', {
      title: `Hidden ${stamp}`, slug: s2, overview: 'Hidden board', rules: 'Be nice.', start_at: at(now + 4000),
      merge_deadline: at(now + 12000), selection_deadline: at(now + 12000), end_at: at(now + 14000),
      dataset: comp.dataset, id_column: 'id', target_columns: ['label'], metric: 'accuracy', public_fraction: 0.5,
      daily_cap: 5, max_team_size: 2, leaderboard: 'hidden',
    });
    assert(r.status === 201, `create: ${r.status} ${r.body}`);
    const c2 = JSON.parse(r.body);
    r = await rest(ap, 'PUT', `/api/v1/competitions/${c2.id}/truth`, truth.toString(), { 'Content-Type': 'text/csv' });
    assert(r.status === 200 || r.status === 201, `truth: ${r.status} ${r.body}`);
    await page.waitForTimeout(Math.max(0, now + 4500 - Date.now()));
    r = await rest(page, 'POST', `/api/v1/competitions/${c2.id}/accept-rules`, {});
    assert(r.status < 300, `accept: ${r.status} ${r.body}`);
    r = await rest(page, 'POST', `/api/v1/competitions/${c2.id}/submissions`, good.toString(), { 'Content-Type': 'text/csv' });
    assert(r.status === 201, `submit: ${r.status} ${r.body}`);
    const sid = JSON.parse(r.body).id;
    for (let i = 0; i < 40; i++) {   // scored before the end (the end waits for nothing in flight anyway)
      r = await rest(page, 'GET', `/api/v1/competitions/${c2.id}/submissions/${sid}`);
      if (JSON.parse(r.body).status === 'scored') break;
      await page.waitForTimeout(200);
    }
    assert(JSON.parse(r.body).status === 'scored', `scored: ${r.body}`);
    await page.goto(`${base}/competitions/${s2}/leaderboard`);
    await page.waitForSelector('[data-testid=comp-board-refused]');
    assert(await page.isDisabled('[data-testid=comp-board-private]'), 'no private board before the end');
    await shot(page, '98-comp-hidden-board');
    await page.waitForTimeout(Math.max(0, now + 15000 - Date.now()));
    await page.goto(`${base}/competitions/${s2}/leaderboard`);
    await page.waitForSelector('[data-testid=comp-board-row].comp-mine');
    assert(await page.getAttribute('[data-testid=comp-board-private]', 'aria-pressed') === 'true', 'the private board is shown first after the end');
    const score = Number(await page.textContent('[data-testid=comp-board-row].comp-mine [data-testid=comp-board-score]'));
    assert(score > 0.7 && score <= 1, `a private score: ${score}`);
    assert(!(await page.content()).includes(canary), 'no canary on the private board');
    await shot(page, '99-comp-private-board');
  });

  await t.test('competitions_host_watches_all_submissions', async () => {
    if (skip || !comp || !ap) return { skip: skip || 'no competition was created' };
    await ap.goto(`${base}/competitions/${slug}/host`);
    await ap.waitForSelector('[data-testid=comp-all-subs] [data-testid=comp-all-row]');
    const states = await ap.$$eval('[data-testid=comp-all-row]', (rs) => rs.map((r) => r.dataset.status).sort());
    assert(JSON.stringify(states) === '["invalid","scored"]', `the host sees both: ${states}`);
    await shot(ap, '96-comp-host-submissions');
    // An edit after the start: the title changes; the fixed fields are not offered.
    assert(await ap.isDisabled('[data-testid=comp-f-metric]'), 'the metric is fixed after the start');
    await ap.fill('[data-testid=comp-f-title]', `Cats and dogs ${stamp} (edited)`);
    await ap.click('[data-testid=comp-save]');
    await ap.waitForSelector('.toast:has-text("Saved.")');
    const r = await rest(ap, 'GET', `/api/v1/competitions/${slug}`);
    assert(JSON.parse(r.body).title.endsWith('(edited)'), `the title changed: ${r.body}`);
    await actx.close();
  });
}
