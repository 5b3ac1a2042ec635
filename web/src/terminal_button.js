// The toolbar's Terminal button (the terminal itself loads lazily).
// Placeholder until the feature lands: an empty element.
export function terminalButton(/* nb */) { return document.createComment('terminal'); }
