// Code intelligence in a cell's editor through the kernel (complete_request,
// inspect_request). Placeholder until the feature lands: no extensions.
export function codeIntel(/* nb, cell */) { return []; }
