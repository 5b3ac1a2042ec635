// The toolbar's Terminal button. The terminal itself (xterm.js, terminal.js)
// loads only when pressed. A terminal is a shell inside the notebook's
// kernel's sandbox, so the button starts that kernel (nb.kc.ensure(), the
// one Run would start) when none runs, and says so.
import { h, toast } from './ui.js';

export function terminalButton(nb) {
  const label = () => (nb.kc && nb.kc.kernel && nb.kc.kernel.status !== 'dead' ? 'Open a terminal in this kernel\'s sandbox'
    : 'Start a kernel to open a terminal (a shell in its sandbox, with this project\'s files)');
  const btn = h('button', { class: 'small', 'data-testid': 'terminal', title: label(),
    onmousedown: (ev) => ev.preventDefault() }, '>_ Terminal');
  nb.events?.addEventListener('kernel', () => { btn.title = label(); });
  btn.addEventListener('click', async () => {
    if (btn.disabled) return;
    btn.disabled = true;
    const was = btn.textContent;
    try {
      if (!(nb.kc.kernel && ['idle', 'busy'].includes(nb.kc.kernel.status))) btn.textContent = 'Starting kernel…';
      const kernel = await nb.kc.waitReady(await nb.kc.ensure());
      btn.textContent = 'Opening…';
      const { openTerminal } = await import('./terminal.js');
      await openTerminal(nb, kernel);
    } catch (e) {
      toast(`Terminal: ${e.message}`, 'error');
    } finally {
      btn.disabled = false;
      btn.textContent = was;
    }
  });
  return btn;
}
