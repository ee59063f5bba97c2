// Gives each request an id: the client's X-Request-Id when it is a sane token, a new
// UUID otherwise (the observe stage gives it). Every response echoes it, and
// every event it causes stores it.
import { randomUUID } from 'node:crypto';

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of a request whose X-Request-Id header is given (undefined: none). */
export function requestIdFor(given: string | undefined): string {
  return given !== undefined && SANE.test(given) ? given : randomUUID();
}
