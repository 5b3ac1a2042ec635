// A worker that hashes a File with the incremental SHA-256 (sha256.js), 4 MiB
// at a time, so a large file never sits in memory and the page stays
// responsive. In: {file}. Out: {progress: bytes} now and then, then {sha256}
// or {error}.
import { Sha256 } from './sha256.js';

const STEP = 4 << 20;

self.onmessage = async (ev) => {
  const { file } = ev.data;
  try {
    const s = new Sha256();
    for (let off = 0; off < file.size; off += STEP) {
      s.update(new Uint8Array(await file.slice(off, Math.min(file.size, off + STEP)).arrayBuffer()));
      self.postMessage({ progress: Math.min(file.size, off + STEP) });
    }
    self.postMessage({ sha256: s.hex() });
  } catch (e) {
    self.postMessage({ error: e && e.message ? e.message : String(e) });
  }
};
