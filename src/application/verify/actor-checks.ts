// Whether an event's actor could have made it: an operator (`cli:…`) or a key of the key
// log, one that writes events of that type, created before the event and not revoked
// before it. The chain cannot show this; the key log can.
import { REQUEST_BUDGET_MS } from '../write/deadline.ts';
import type { KeyHistory } from '../../store/audit-reads.ts';
import { scopeOf, type KeyScope } from '../../store/keys.ts';

/** Operator actors (`cli:…`) are no API key; every other actor names one. */
const OPERATOR_ACTOR = 'cli:';

interface KeyLifetime {
  created: string;
  revoked?: string;
  /** As its KeyCreated's data says; undefined for data this version does not know. */
  scope: KeyScope | undefined;
}

/** When each key of the key log was created and revoked, and its scope. */
export function keyLifetimes(history: KeyHistory): Map<string, KeyLifetime> {
  const lifetimes = new Map<string, KeyLifetime>();
  for (const [, type, name, , recordedAt, , , , data] of history.events) {
    if (type === 'KeyCreated' && !lifetimes.has(name)) lifetimes.set(name, { created: recordedAt, scope: scopeOf(data) });
    const key = lifetimes.get(name);
    if (type === 'KeyRevoked' && key && key.revoked === undefined) key.revoked = recordedAt;
  }
  return lifetimes;
}

/**
 * Why an actor could not have written an event of this type, or undefined when it could:
 * operators' commands (`cli:…`) track pets and set their status, a key's PATCH sets a
 * quantity, and a read-only key writes nothing. scope: the key's, when it is known
 * (through the API alone it is not).
 */
export function eventTypeProblem(actor: string, type: string, scope?: KeyScope | 'unknown'): string | undefined {
  const outside = 'the event was made outside the service';
  if (actor.startsWith(OPERATOR_ACTOR)) {
    return type === 'PetTracked' || type === 'StatusSet'
      ? undefined
      : `its actor "${actor}" is an operator, whose commands write PetTracked and StatusSet, not ${type}: ${outside}`;
  }
  if (scope === 'read-only') return `its actor "${actor}" is a read-only key, which writes nothing: ${outside}`;
  if (scope === 'unknown') return `its actor "${actor}" is a key of a scope this version does not know, which it refuses: ${outside}`;
  return type === 'QuantitySet' ? undefined : `its actor "${actor}" is an API key, whose PATCH writes QuantitySet, not ${type}: ${outside}`;
}

/**
 * How far an event's time may pass its key's revocation, or precede its creation, and
 * still be one the service made: a request authenticated before a revocation may be
 * committed after it (for up to a request's time on the database), and the instances
 * sharing a PostgreSQL database (or an operator's machine) stamp times with their own
 * clocks. Events in that margin are warnings; beyond it, BROKEN. Times are compared as
 * instants (milliseconds): an event at the very instant of a revocation is before it.
 */
export const ACTOR_TIME_MARGIN_MS = REQUEST_BUDGET_MS;

/** Why an event's actor could not have made it ({ broken }), or made it only within the
 * margin ({ warning }); undefined when it could. */
export function actorProblem(
  actor: string,
  type: string,
  recordedAt: string,
  keys: ReturnType<typeof keyLifetimes>,
): { broken: string } | { warning: string } | undefined {
  if (actor.startsWith(OPERATOR_ACTOR)) {
    const wrong = eventTypeProblem(actor, type);
    return wrong === undefined ? undefined : { broken: wrong };
  }
  const key = keys.get(actor);
  if (!key) return { broken: `its actor "${actor}" is no key of the key log: the event was made outside the service` };
  const wrong = eventTypeProblem(actor, type, key.scope ?? 'unknown');
  if (wrong) return { broken: wrong };
  const at = Date.parse(recordedAt);
  const beforeCreation = Date.parse(key.created) - at;
  if (beforeCreation > ACTOR_TIME_MARGIN_MS)
    return { broken: `its actor "${actor}" became a key only at ${key.created}, after the event (${recordedAt})` };
  const afterRevocation = key.revoked === undefined ? 0 : at - Date.parse(key.revoked);
  if (afterRevocation > ACTOR_TIME_MARGIN_MS)
    return { broken: `its actor "${actor}" was revoked at ${key.revoked}, before the event (${recordedAt})` };
  if (beforeCreation > 0) return { warning: `its actor "${actor}" became a key ${beforeCreation} ms after it (${key.created})` };
  if (afterRevocation > 0) return { warning: `its actor "${actor}" was revoked ${afterRevocation} ms before it (${key.revoked})` };
  return undefined;
}
