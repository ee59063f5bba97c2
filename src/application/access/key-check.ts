// Which key a request's bearer token is, as the edge's authentication asks: from memory
// when the store can tell at once, else from the store within the request's time on the
// database (past it, DeadlinePassed: a 503).
import type { KeyStore, Principal } from '../../store/keys.ts';
import { REQUEST_BUDGET_MS, byDeadline } from '../write/deadline.ts';

export type { Principal };

/** The keys as authentication reads them. */
export type KeyCheckSource = Pick<KeyStore, 'authenticate' | 'authenticateFromMemory' | 'onDistrust'>;

/** The token's principal from the store (undefined: refused), within the request's budget. */
export function principalWithinBudget(keys: Pick<KeyStore, 'authenticate'>, token: string): Promise<Principal | undefined> {
  return byDeadline(keys.authenticate(token), Date.now() + REQUEST_BUDGET_MS);
}
