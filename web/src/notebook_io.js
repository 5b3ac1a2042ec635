// The notebook's download and share menu. Placeholder until the feature
// lands: an empty element.
export function notebookMenu(/* nb */) { return document.createComment('notebook menu'); }
