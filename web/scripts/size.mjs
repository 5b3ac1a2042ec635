// After `vite build`: write NAME.gz next to each script, style and SVG (the
// server sends it to clients that accept gzip), print the gzipped sizes and
// fail the build when the JavaScript is over budget (500 KB gzipped).
import { readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const BUDGET = 500 * 1024;
const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
let js = 0, css = 0, entry = 0;
const rows = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) { walk(p); continue; }
    if (!/\.(js|css|svg|html)$/.test(name)) continue;
    const raw = readFileSync(p);
    const gz = gzipSync(raw, { level: 9 });
    writeFileSync(p + '.gz', gz);
    if (name.endsWith('.js')) { js += gz.length; if (name.startsWith('index-')) entry += gz.length; }
    if (name.endsWith('.css')) css += gz.length;
    rows.push([p.slice(dist.length + 1), raw.length, gz.length]);
  }
}
walk(dist);
rows.sort((a, b) => b[2] - a[2]);
for (const [n, r, g] of rows) console.log(`  ${n.padEnd(48)} ${(r / 1024).toFixed(1).padStart(8)} KB  ${(g / 1024).toFixed(1).padStart(7)} KB gz`);
console.log(`JavaScript total: ${(js / 1024).toFixed(1)} KB gzipped (entry ${(entry / 1024).toFixed(1)} KB; budget ${BUDGET / 1024} KB); CSS ${(css / 1024).toFixed(1)} KB gzipped`);
if (js > BUDGET) {
  console.error(`JavaScript is over the ${BUDGET / 1024} KB gzipped budget`);
  process.exit(1);
}
