// Model deployments in the web app (issue 19 item 6); screenshots 95-97.
// A tiny model saved with paddle.jit.save (the framework's python package
// next to the eddy binary) goes into a project of the module's own and a
// version; "Deployments" in the top bar; the deploy form picks the project,
// its version and the saved model found in it; the deployment's page shows
// its replica becoming ready, "Try a request" answers with the model's
// outputs, the curl command names the endpoint, and the usage charts show the
// call. The module deletes its deployment and project.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const SAVE_PY = `
import sys, paddle
paddle.seed(5)
m = paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.ReLU(), paddle.nn.Linear(4, 2))
paddle.jit.save(m, sys.argv[1] + '/tiny', input_spec=[paddle.static.InputSpec([None, 3], 'float32', 'x')])
`;

export async function run(t) {
  await t.test('deploy_a_saved_model_try_it_and_see_usage', async () => {
    const { page, base, assert, shot, rest, eddy } = t;
    const tmp = mkdtempSync(join(tmpdir(), 'eddy-e2e-deploy-'));
    let projectId = null, depId = null;
    try {
      writeFileSync(join(tmp, 'save.py'), SAVE_PY);
      execFileSync('/usr/bin/python3', [join(tmp, 'save.py'), tmp],
        { env: { ...process.env, PYTHONPATH: resolve(dirname(eddy), '..', 'framework', 'python') }, stdio: 'pipe' });
      const p = await rest(page, 'POST', '/api/v1/projects', { name: 'served-e2e', visibility: 'private' });
      assert(p.status === 201, `project: ${p.status} ${p.body}`);
      projectId = JSON.parse(p.body).id;
      for (const ext of ['pdmodel', 'pdiparams']) {
        const b64 = readFileSync(join(tmp, `tiny.${ext}`)).toString('base64');
        const st = await page.evaluate(async ({ url, b64 }) => {
          const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
          const csrf = (await (await fetch('/api/v1/me')).json()).csrf_token;
          return (await fetch(url, { method: 'PUT', headers: { 'X-CSRF-Token': csrf }, body: bytes })).status;
        }, { url: `/api/v1/projects/${encodeURIComponent(projectId)}/files/models/tiny.${ext}`, b64 });
        assert(st === 200 || st === 201, `upload ${ext}: ${st}`);
      }
      const v = await rest(page, 'POST', `/api/v1/projects/${encodeURIComponent(projectId)}/versions`, { message: 'trained' });
      assert(v.status === 201, `version: ${v.status} ${v.body}`);

      await page.goto(`${base}/projects`);
      await page.getByRole('link', { name: 'Deployments' }).click();
      await page.waitForSelector('[data-testid=deploy-form]');
      await page.selectOption('[data-testid=deploy-project]', projectId);
      await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=deploy-path] option')].some((o) => o.value === 'models/tiny'));
      await page.fill('[data-testid=deploy-name]', 'tiny-e2e');
      await page.fill('[data-testid=deploy-max-delay]', '1');
      await shot(page, '95-deploy-form');
      await page.click('[data-testid=deploy-submit]');
      await page.waitForURL(/\/deployments\/\d+$/);
      depId = page.url().split('/').pop();
      await page.waitForFunction(() => (document.querySelector('[data-testid=dep-ready]') || {}).textContent === '1/1', null, { timeout: 60000 });
      await page.fill('[data-testid=try-body]', '{"inputs": {"x": {"dtype": "float32", "data": [[1, 2, 3], [0, 0, 0]]}}}');
      await page.click('[data-testid=try-send]');
      await page.waitForFunction(() => /model v1/.test((document.querySelector('[data-testid=try-output]') || {}).textContent || ''));
      const outText = await page.textContent('[data-testid=try-output]');
      assert(/"shape": \[\s*2,\s*2\s*\]/.test(outText), `outputs: ${outText}`);
      const curl = await page.textContent('[data-testid=curl]');
      assert(curl.includes(`/serve/${depId}/predict`) && curl.includes('Bearer $EDDY_KEY'), `curl: ${curl}`);
      await page.waitForSelector('[data-testid=usage]', { timeout: 15000 });
      await shot(page, '96-deployment');
      await page.goto(`${base}/deployments`);
      await page.waitForSelector('[data-testid=deployments] >> text=tiny-e2e');
      await shot(page, '97-deployments');
    } finally {
      if (depId) await rest(page, 'DELETE', `/api/v1/deployments/${depId}`);
      if (projectId) await rest(page, 'DELETE', `/api/v1/projects/${encodeURIComponent(projectId)}`);
      rmSync(tmp, { recursive: true, force: true });
    }
  });
}
