// Acceptance: @jupyterlab/services (Jupyter's own client library) starts a
// kernel on the server at JUP_BASE_URL with the token JUP_TOKEN, executes
// print(6*7) over the kernel's channels WebSocket and expects "42".
// Prints one JSON line per step; exits 0 on success, 1 on a wrong answer,
// 2 on an error or after 120 s. Run by tests/integration/test_jupyter_clients.c.
import { KernelManager, ServerConnection } from '@jupyterlab/services';
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
  const serverSettings = ServerConnection.makeSettings({
    baseUrl,
    wsUrl: baseUrl.replace(/^http/, 'ws'),
    token,
    appendToken: true,
    WebSocket,
    fetch,
    Request,
    Headers,
  });
  const manager = new KernelManager({ serverSettings });
  await manager.ready;
  const kernel = await manager.startNew({ name: 'python3' });
  console.log(JSON.stringify({ step: 'started', kernel_id: kernel.id }));
  let stdout = '';
  const future = kernel.requestExecute({ code: 'print(6*7)' });
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') stdout += msg.content.text;
  };
  const reply = await future.done;
  console.log(JSON.stringify({ step: 'executed', status: reply.content.status, stdout,
                               protocol: kernel._selectedProtocol ?? null }));
  await kernel.shutdown();
  manager.dispose();
  clearTimeout(timer);
  process.exit(reply.content.status === 'ok' && stdout === '42\n' ? 0 : 1);
} catch (e) {
  console.error('error:', e && e.stack ? e.stack : e);
  process.exit(2);
}

