// Allow's value, as RFC 9110 wants it: every method of the path, OPTIONS itself included
// (9.3.7, 15.5.6), in one order, the documented one: GET, HEAD, the other methods,
// OPTIONS. The router answers OPTIONS with 204 and it, and a 405 with it.
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Allow's value for these methods: in the documented order, OPTIONS last. */
export function allowHeader(methods: readonly string[]): string {
  const rank = (m: string) => (ORDER.includes(m) ? ORDER.indexOf(m) : ORDER.length);
  const others = [...new Set(methods)].filter((m) => m !== 'OPTIONS' && m !== '');
  return [...others.sort((a, b) => rank(a) - rank(b)), 'OPTIONS'].join(', ');
}
