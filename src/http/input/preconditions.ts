// Conditional requests (RFC 9110 section 13), judged by the service itself rather than by
// Koa's ctx.fresh: fetch adds `Cache-Control: no-cache` to every conditional request,
// which ctx.fresh takes as a reload, and ctx.fresh lets If-Modified-Since overrule a
// matching If-None-Match. Only entity tags count here: the service sends no
// Last-Modified, so If-Modified-Since and If-Unmodified-Since have nothing to compare
// with and are ignored (RFC 9110 13.1.3, 13.1.4), and it serves no ranges (If-Range).
import type { Command } from '../../domain/decide.ts';

/** A parsed If-Match / If-None-Match value. */
export type TagCondition =
  | { kind: 'any' }
  | { kind: 'tags'; tags: { weak: boolean; opaque: string }[] }
  /** Unparseable, or no tag at all (an empty header): never lets a write through. */
  | { kind: 'malformed' };

export interface Conditions {
  ifMatch?: TagCondition;
  ifNoneMatch?: TagCondition;
}

// RFC 9110 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
// Node hands header values over as Latin-1, so obs-text is \x80-\xff.
const ENTITY_TAG = /(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/y;
const SEPARATORS = /[ \t,]*/y;

export function parseTagCondition(header: string): TagCondition {
  const value = header.trim();
  if (value === '*') return { kind: 'any' };
  const tags: { weak: boolean; opaque: string }[] = [];
  // A #list: elements separated by commas and optional white space; empty elements are
  // allowed (RFC 9110 5.6.1), but each element must be a whole entity-tag.
  let at = 0;
  for (;;) {
    SEPARATORS.lastIndex = at;
    const separator = SEPARATORS.exec(value)![0];
    at = SEPARATORS.lastIndex;
    if (at === value.length) break;
    if (tags.length > 0 && !separator.includes(',')) return { kind: 'malformed' };
    ENTITY_TAG.lastIndex = at;
    const match = ENTITY_TAG.exec(value);
    if (!match) return { kind: 'malformed' };
    tags.push({ weak: match[1] !== undefined, opaque: match[2]! });
    at = ENTITY_TAG.lastIndex;
  }
  return tags.length === 0 ? { kind: 'malformed' } : { kind: 'tags', tags };
}

/** The conditions a request carries; a header that is present but empty counts. */
export function readConditions(headers: Record<string, string | string[] | undefined>): Conditions {
  const read = (name: string) => {
    const value = headers[name];
    // Node joins repeated If-Match / If-None-Match lines with ", ": one list.
    return value === undefined ? undefined : parseTagCondition(Array.isArray(value) ? value.join(', ') : value);
  };
  const conditions: Conditions = {};
  const ifMatch = read('if-match');
  const ifNoneMatch = read('if-none-match');
  if (ifMatch) conditions.ifMatch = ifMatch;
  if (ifNoneMatch) conditions.ifNoneMatch = ifNoneMatch;
  return conditions;
}

function hasConditions(conditions: Conditions): boolean {
  return conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined;
}

function parse(tag: string): { weak: boolean; opaque: string } {
  const weak = tag.startsWith('W/');
  return { weak, opaque: tag.slice(weak ? 3 : 1, -1) };
}

/** RFC 9110 8.8.3.2: strong comparison (neither weak) for If-Match. */
function matchesStrong(condition: TagCondition, current: string): boolean {
  const tag = parse(current);
  if (condition.kind === 'any') return true;
  if (condition.kind === 'malformed') return false;
  return !tag.weak && condition.tags.some((t) => !t.weak && t.opaque === tag.opaque);
}

/** Weak comparison (W/ ignored) for If-None-Match. */
function matchesWeak(condition: TagCondition, current: string): boolean {
  const tag = parse(current);
  if (condition.kind === 'any') return true;
  if (condition.kind === 'malformed') return false;
  return condition.tags.some((t) => t.opaque === tag.opaque);
}

export type ReadVerdict = 'proceed' | 'not-modified' | 'if-match-failed';
export type WriteVerdict = 'proceed' | 'if-match-failed' | 'if-none-match-failed';

/**
 * GET/HEAD of a resource that exists with tag `current` (RFC 9110 13.2.2 steps 1, 3).
 * A malformed If-None-Match is ignored: the full answer is always safe to give.
 */
export function judgeRead(conditions: Conditions, current: string): ReadVerdict {
  if (conditions.ifMatch && !matchesStrong(conditions.ifMatch, current)) return 'if-match-failed';
  if (conditions.ifNoneMatch && matchesWeak(conditions.ifNoneMatch, current)) return 'not-modified';
  return 'proceed';
}

/**
 * A write to a resource that exists with tag `current`. The entry must be known to
 * exist before this is asked: on one that does not, the answer is 404, not 412. A
 * condition the service cannot read (malformed or empty) never lets a write through.
 */
export function judgeWrite(conditions: Conditions, current: string): WriteVerdict {
  if (conditions.ifMatch && !matchesStrong(conditions.ifMatch, current)) return 'if-match-failed';
  const none = conditions.ifNoneMatch;
  if (none && (none.kind === 'malformed' || matchesWeak(none, current))) return 'if-none-match-failed';
  return 'proceed';
}

/**
 * What a failed If-Match should add when it held weak tags: they never match (strong
 * comparison), which a client that copied a W/ tag from a cache would not guess.
 */
export function weakTagNote(conditions: Conditions): string {
  const ifMatch = conditions.ifMatch;
  if (ifMatch?.kind !== 'tags' || !ifMatch.tags.some((t) => t.weak)) return '';
  return '; weak tags (W/"…") never match: If-Match uses strong comparison, send the ETag as given';
}

/** An entry's ETag: its version, quoted (a strong tag). */
export function entryTag(version: number): string {
  return `"${version}"`;
}

/**
 * The SetQuantity command of a PATCH: the pet, the quantity and the request's
 * conditions as its precondition, which names the condition that fails (a
 * WriteVerdict). The route and the tests build it here, so they cannot judge apart.
 */
export function setQuantityCommand(
  petId: bigint,
  quantity: number,
  headers: Record<string, string | string[] | undefined>,
): Command & { type: 'SetQuantity' } {
  const conditions = readConditions(headers);
  if (!hasConditions(conditions)) return { type: 'SetQuantity', petId, quantity };
  return {
    type: 'SetQuantity',
    petId,
    quantity,
    precondition: (version) => {
      const verdict = judgeWrite(conditions, entryTag(version));
      return verdict === 'proceed' ? undefined : verdict;
    },
  };
}
