// A bar chart in SVG: [{label, value}] -> element. No library, no canvas.
const NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}
export function barChart(data, { title = '', unit = '', width = 640, height = 180 } = {}) {
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': title });
  const max = Math.max(1e-9, ...data.map((d) => d.value));
  const pad = 24, bw = (width - pad) / Math.max(1, data.length);
  data.forEach((d, i) => {
    const bh = (d.value / max) * (height - 2 * pad);
    const r = s('rect', { x: pad + i * bw + 2, y: height - pad - bh, width: Math.max(1, bw - 4), height: bh, class: 'bar' });
    const t = s('title', {}); t.textContent = `${d.label}: ${d.value.toFixed(3)} ${unit}`; r.append(t);
    svg.append(r);
    if (data.length <= 16 || i % Math.ceil(data.length / 8) === 0) {
      const l = s('text', { x: pad + i * bw + bw / 2, y: height - 6, 'text-anchor': 'middle', class: 'axis' });
      l.textContent = d.label; svg.append(l);
    }
  });
  const top = s('text', { x: 2, y: 14, class: 'axis' }); top.textContent = `${max.toFixed(2)} ${unit}`; svg.append(top);
  svg.append(s('line', { x1: pad, x2: width, y1: height - pad, y2: height - pad, class: 'axis-line' }));
  return svg;
}
