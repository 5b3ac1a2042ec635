// Live resource meters of the notebook's kernel. Placeholder until the
// feature lands: an empty element.
export function kernelMeters(/* nb */) { return document.createComment('kernel meters'); }
