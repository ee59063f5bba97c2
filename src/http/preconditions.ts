// Entity-tag comparison for If-Match (RFC 9110 section 13.1.1): strong comparison, so a
// weak tag never matches; `*` matches any current entry.
const ENTITY_TAG = /\s*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)/y;

/** A test of the entry's version, or undefined when the header is absent. */
export function ifMatch(header: string): ((version: number) => boolean) | undefined {
  if (header.trim() === '') return undefined;
  if (header.trim() === '*') return () => true;
  const strong = new Set<string>();
  ENTITY_TAG.lastIndex = 0;
  let match: RegExpExecArray | null;
  while (ENTITY_TAG.lastIndex < header.length && (match = ENTITY_TAG.exec(header))) {
    if (!match[1]) strong.add(match[2]!);
  }
  // An unparseable header matches nothing: the update is refused rather than guessed.
  if (ENTITY_TAG.lastIndex < header.length) return () => false;
  return (version) => strong.has(String(version));
}
