// The notebook's side panel (files, table of contents). Placeholder until the
// feature lands: an empty element.
export function sidePanel(/* nb */) { return document.createComment('side panel'); }
