// Markdown cells: marked for the text, KaTeX for $...$ and $$...$$, DOMPurify
// for what reaches the page. Markdown that carries raw HTML is rendered only
// inside a sandboxed iframe (no allow-same-origin, no scripts).
import { marked } from 'marked';
import katex from 'katex';
import DOMPurify from 'dompurify';
import 'katex/dist/katex.min.css';

marked.setOptions({ gfm: true, breaks: false });

function renderMath(tex, display) {
  try { return katex.renderToString(tex, { displayMode: display, throwOnError: false, output: 'htmlAndMathml' }); }
  catch (e) { return `<code>${tex.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]))}</code>`; }
}

// Pull math out before marked sees it (so _ and * inside stay math), render
// it, and put it back after.
function withMath(src) {
  const math = [];
  const keep = (html) => `\uE000M${math.push(html) - 1}\uE000`;
  const code = [];
  let s = src.replace(/```[\s\S]*?```|`[^`\n]*`/g, (m) => `\uE001${code.push(m) - 1}\uE001`);
  s = s.replace(/\$\$([\s\S]+?)\$\$/g, (_, t) => keep(renderMath(t.trim(), true)));
  s = s.replace(/\\\[([\s\S]+?)\\\]/g, (_, t) => keep(renderMath(t.trim(), true)));
  s = s.replace(/(^|[^\\$])\$([^\s$](?:[^$\n]*?[^\s$])?)\$/g, (_, pre, t) => pre + keep(renderMath(t, false)));
  s = s.replace(/\uE001(\d+)\uE001/g, (_, i) => code[Number(i)]);
  return { text: s, restore: (html) => html.replace(/\uE000M(\d+)\uE000/g, (_, i) => math[Number(i)] || '') };
}

function hasRawHtml(tokens) {
  for (const t of tokens) {
    if (t.type === 'html') return true;
    if (t.tokens && hasRawHtml(t.tokens)) return true;
    if (t.items && hasRawHtml(t.items)) return true;
  }
  return false;
}

// nbformat attachments: a Markdown cell's `attachments` ({name: {mime:
// data}}, what Jupyter stores for an image pasted or dropped into the cell)
// are referenced as `attachment:name` URLs. While one cell is sanitised its
// attachments are here, and the hook below turns an <img> whose src names one
// into a data: URL, for image/* data only (anything else keeps no src).
// DOMPurify itself would drop the attachment: scheme.
let cellAttachments = null;
const IMAGE_MIME = /^image\/[a-z0-9][a-z0-9.+-]*$/i;
const text = (v) => (Array.isArray(v) ? v.join('') : typeof v === 'string' ? v : '');
const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

export function attachmentUrl(attachments, url) {
  if (!attachments || typeof attachments !== 'object' || !url.startsWith('attachment:')) return null;
  let name = url.slice('attachment:'.length);
  if (!own(attachments, name)) { try { name = decodeURIComponent(name); } catch { return ''; } }
  const bundle = own(attachments, name) ? attachments[name] : null;
  if (!bundle || typeof bundle !== 'object') return '';
  const mime = Object.keys(bundle).find((m) => IMAGE_MIME.test(m) && text(bundle[m]));
  if (!mime) return '';
  const data = text(bundle[mime]);
  if (mime.toLowerCase() === 'image/svg+xml') {
    // nbformat keeps SVG as text; some writers base64 it like the others
    const svg = /^\s*</.test(data) ? data : (() => { try { return atob(data.replace(/\s/g, '')); } catch { return ''; } })();
    return svg ? `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}` : '';
  }
  const b64 = data.replace(/\s/g, '');
  return /^[A-Za-z0-9+/]*={0,2}$/.test(b64) ? `data:${mime.toLowerCase()};base64,${b64}` : '';
}

DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
  if (!cellAttachments || data.attrName !== 'src' || node.nodeName !== 'IMG') return;
  const url = attachmentUrl(cellAttachments, data.attrValue.trim());
  if (url !== null) data.attrValue = url;
});

// Render markdown source into `el` (replacing its content); `attachments`:
// the cell's nbformat attachments, for its `attachment:name` images.
export function renderMarkdown(el, src, { attachments = null } = {}) {
  const { text: md, restore } = withMath(src || '');
  const tokens = marked.lexer(md);
  let html;
  cellAttachments = attachments && typeof attachments === 'object' ? attachments : null;
  try {
    html = DOMPurify.sanitize(restore(marked.parser(tokens)), { USE_PROFILES: { html: true, mathMl: true, svg: true } });
  } finally { cellAttachments = null; }
  el.replaceChildren();
  if (hasRawHtml(tokens)) el.append(sandboxedFrame(html, 'Markdown with HTML'));
  else {
    el.innerHTML = html;
    for (const a of el.querySelectorAll('a[href]')) { a.target = '_blank'; a.rel = 'noopener noreferrer'; }
  }
}

// An iframe for untrusted HTML: sandboxed with no permissions at all (opaque
// origin, no scripts, no forms, no same-origin). It inherits the page's CSP.
export function sandboxedFrame(html, title = 'Output') {
  const styles = [...document.querySelectorAll('link[rel=stylesheet]')].map((l) => `<link rel="stylesheet" href="${l.href}">`).join('');
  const f = document.createElement('iframe');
  f.setAttribute('sandbox', '');
  f.setAttribute('title', title);
  f.setAttribute('referrerpolicy', 'no-referrer');
  f.className = 'sandboxed';
  f.srcdoc = `<!doctype html><html><head><meta charset="utf-8">${styles}<style>body{font:14px system-ui,sans-serif;margin:8px;color:#1d2330}table{border-collapse:collapse}td,th{border:1px solid #ccd;padding:2px 6px}</style></head><body>${html}</body></html>`;
  const lines = (html.match(/<(p|tr|li|h\d|div|br)\b/gi) || []).length;
  f.style.height = `${Math.min(600, Math.max(60, 28 + lines * 24))}px`;
  return f;
}
