// The Idempotency-Key request header (IETF draft "The Idempotency-Key HTTP Header
// Field"): the key it names and the fingerprint of the request it comes with. What becomes of
// a request with a key, and when its answer is stored, is the application's job
// (application/idempotency.ts).
import { createHash } from 'node:crypto';

/**
 * The key a valid header names. Its grammar is the document's (the IdempotencyKey
 * parameter's pattern, judged with the request): the quoted form (a Structured Field
 * string without escapes) and the bare token name the same key.
 */
export function keyOf(text: string): string {
  return text.startsWith('"') && text.endsWith('"') && text.length >= 2 ? text.slice(1, -1) : text;
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
