// Merging a notebook the browser edits with the copy another writer changed
// meanwhile (the kernel's output fold, code in the kernel, another tab, the
// API). Used when a conditional save answers 412: the page reads the current
// file and merges three ways, with `base` = what the page and the server last
// agreed on (what it loaded or last saved).
//
// The result follows the local cells in local order. For a cell both sides
// have: source, cell_type and metadata are the local ones, unless only the
// server changed them since the base (then the server's); when both changed
// the source differently, that is a conflict the user must settle. Outputs and
// execution_count come from the newer side: a cell running here, or run here
// when the file holds the same execution, keeps its local outputs when they are
// at least as long as the server's (the kernel's fold writes the same outputs
// into the file), otherwise the server's win; any other cell takes the side
// that changed since the base (the server's when both did). Cells only the server has are kept, each after its previous
// neighbour in the server's order, except one the page deleted that the server
// left unchanged since the base (the local deletion stands). Cells only the
// page has are kept. Nothing is dropped silently: every drop is a local
// deletion of an unchanged cell.

const text = (s) => (Array.isArray(s) ? s.join('') : s || '');
const outKey = (c) => JSON.stringify(c.outputs || []);
const typeOf = (c) => (c.cell_type === 'markdown' || c.cell_type === 'raw' ? c.cell_type : 'code');

// What the page and the server agreed on, per cell id.
export function baseOf(cells) {
  const m = new Map();
  for (const c of cells || []) {
    if (!c || !c.id) continue;
    m.set(c.id, { source: text(c.source), cell_type: typeOf(c), outputs: outKey(c) });
  }
  return m;
}

// local, server: nbformat cell lists; base: baseOf(...); ranHere: ids of the
// cells run in this page; running: ids of those still running here. Returns
// {cells, conflicts: [id], inserted: [id], dropped: [id]}. (For a cell still
// running here the page keeps showing its own outputs, which the kernel's
// event stream completes; the saved file gets the longer copy meanwhile.)
export function mergeCells(local, server, base, { ranHere = new Set(), running = new Set() } = {}) {
  const srv = new Map();
  for (const c of server || []) if (c && c.id) srv.set(c.id, c);
  const localIds = new Set((local || []).map((c) => c.id));
  const conflicts = [];
  const out = [];
  for (const L of local || []) {
    const S = srv.get(L.id);
    if (!S) { out.push(L); continue; }
    const B = base.get(L.id);
    const lSrc = text(L.source), sSrc = text(S.source);
    const localTouched = !B || lSrc !== B.source || typeOf(L) !== B.cell_type;
    const serverTouched = !B || sSrc !== B.source || typeOf(S) !== B.cell_type;
    let cell;
    if (lSrc === sSrc && typeOf(L) === typeOf(S)) cell = { ...L };
    else if (!localTouched && serverTouched) cell = { ...L, cell_type: S.cell_type, source: S.source, metadata: S.metadata || {} };
    else if (localTouched && !serverTouched) cell = { ...L };
    else if (lSrc !== sSrc) { conflicts.push(L.id); cell = { ...L }; }
    else cell = { ...L };   // same source, the type changed on one side: the local one
    if (typeOf(cell) === 'code') {
      const lo = outKey(L), so = typeOf(S) === 'code' ? outKey(S) : '[]';
      let useServer = false;
      if (lo !== so) {
        const sameRun = L.execution_count !== null && L.execution_count !== undefined && L.execution_count === S.execution_count;
        // Running here, or run here and the file holds the same execution:
        // the longer copy is the newer one (the fold may be ahead of the page).
        if (running.has(L.id) || (ranHere.has(L.id) && sameRun)) useServer = lo.length < so.length;
        // Otherwise the side that changed since the base (the server's when both did).
        else useServer = !B || so !== B.outputs;
      }
      if (useServer) { cell.outputs = S.outputs || []; cell.execution_count = S.execution_count ?? null; }
      else { cell.outputs = L.outputs || []; cell.execution_count = L.execution_count ?? null; }
    } else { delete cell.outputs; delete cell.execution_count; }
    out.push(cell);
  }
  // Cells only the server has, after their previous neighbour.
  const inserted = [], dropped = [];
  let prev = null;   // id of the last server cell present in `out`
  for (const S of server || []) {
    if (!S || !S.id) continue;
    if (localIds.has(S.id)) { prev = S.id; continue; }
    const B = base.get(S.id);
    if (B && text(S.source) === B.source && typeOf(S) === B.cell_type && outKey(S) === B.outputs) {
      dropped.push(S.id);   // deleted in the page, untouched on the server
      continue;
    }
    const at = prev === null ? 0 : out.findIndex((c) => c.id === prev) + 1;
    out.splice(at, 0, S);
    inserted.push(S.id);
    prev = S.id;
  }
  return { cells: out, conflicts, inserted, dropped };
}
