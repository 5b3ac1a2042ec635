// Acceptance: @jupyterlab/services (Jupyter's own client library) opens a
// terminal on the server at JUP_BASE_URL with the token JUP_TOKEN, as
// JupyterLab's terminal does: a kernel first (Eddy runs terminals inside a
// kernel's sandbox), then TerminalManager.startNew() (POST /api/terminals),
// the terminado WebSocket (/terminals/websocket/NAME?token=...), set_size,
// `echo hi $((6*7))` and "hi 42" back, the list (GET /api/terminals), and
// shutdown (DELETE). Prints one JSON line per step; exits 0 on success, 1
// on a wrong answer, 2 on an error or after 120 s. Run by
// tests/integration/test_terminals.c.
import { KernelManager, ServerConnection, TerminalManager } from '@jupyterlab/services';
import { PageConfig } from '@jupyterlab/coreutils';
import WebSocket from 'ws';

const baseUrl = process.env.JUP_BASE_URL;
const token = process.env.JUP_TOKEN;
if (!baseUrl || !token) {
  console.error('set JUP_BASE_URL and JUP_TOKEN');
  process.exit(2);
}
const timer = setTimeout(() => {
  console.error('timed out after 120 s');
  process.exit(2);
}, 120000);

try {
  PageConfig.setOption('terminalsAvailable', 'true');   // what a Jupyter server's page says
  const serverSettings = ServerConnection.makeSettings({
    baseUrl, wsUrl: baseUrl.replace(/^http/, 'ws'), token, appendToken: true, WebSocket, fetch, Request, Headers,
  });
  const kernels = new KernelManager({ serverSettings });
  await kernels.ready;
  const kernel = await kernels.startNew({ name: 'python3' });
  // the terminal needs the kernel running: a first cell's reply says it is
  await kernel.requestExecute({ code: 'pass' }).done;
  const terminals = new TerminalManager({ serverSettings });
  await terminals.ready;
  const term = await terminals.startNew();
  console.log(JSON.stringify({ step: 'started', name: term.name }));
  let out = '';
  const got = new Promise((resolve) => {
    term.messageReceived.connect((_, msg) => {
      if (msg.type === 'stdout') out += msg.content[0];
      if (out.includes('hi 42')) resolve();
    });
  });
  term.send({ type: 'set_size', content: [30, 100, 600, 800] });
  term.send({ type: 'stdin', content: ['echo hi $((6*7)); stty size\r'] });
  await got;
  await new Promise((r) => setTimeout(r, 300));   // stty's answer follows
  await terminals.refreshRunning();
  const listed = [...terminals.running()].map((m) => m.name);
  console.log(JSON.stringify({ step: 'echoed', ok: out.includes('hi 42'), size: /30 100/.test(out), listed }));
  await term.shutdown();
  await terminals.refreshRunning();
  const after = [...terminals.running()].length;
  console.log(JSON.stringify({ step: 'shut down', left: after }));
  await kernel.shutdown();
  terminals.dispose();
  kernels.dispose();
  clearTimeout(timer);
  process.exit(out.includes('hi 42') && listed.includes(term.name) && after === 0 ? 0 : 1);
} catch (e) {
  console.error('error:', e && e.stack ? e.stack : e);
  process.exit(2);
}
