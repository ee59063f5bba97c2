// The Idempotency-Key request header (IETF draft "The Idempotency-Key HTTP Header
// Field"): its syntax and the fingerprint of the request it comes with. What becomes of
// a request with a key, and when its answer is stored, is the application's job
// (application/idempotency.ts).
import { createHash } from 'node:crypto';
import { HttpError } from './errors.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const MAX_LENGTH = 255;
// Visible ASCII; in the quoted form (a Structured Field string) without `"` and `\`,
// so that no escape needs reading.
const BARE = /^[\x21-\x7e]{1,255}$/;
const QUOTED = /^"([\x21\x23-\x5b\x5d-\x7e]{1,255})"$/;

/**
 * The key a request carries, undefined without the header. The quoted form and the bare
 * token name the same key. A repeated header arrives joined with ", " and is refused (a
 * space is not visible ASCII), as is an empty or overlong one.
 */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers[IDEMPOTENCY_HEADER];
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(', ') : value;
  const quoted = QUOTED.exec(text);
  if (quoted) return quoted[1]!;
  if (BARE.test(text) && !text.startsWith('"')) return text;
  throw new HttpError(
    400,
    'invalid_idempotency_key',
    `Idempotency-Key must be 1 to ${MAX_LENGTH} visible ASCII characters, bare or in double quotes, sent once`,
  );
}

/** What makes two requests with one key the same request: the method, the path, the
 * body's value (not its bytes: 5.0 is 5) and the preconditions as sent. */
export function fingerprintOf(request: {
  method: string;
  path: string;
  body: unknown;
  ifMatch: string | undefined;
  ifNoneMatch: string | undefined;
}): string {
  const parts = [request.method, request.path, request.body, request.ifMatch ?? null, request.ifNoneMatch ?? null];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
