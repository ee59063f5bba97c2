// A request's time on the database: 5 s from when its work begins, for every round trip
// it makes (authentication, reads, the batch), whatever the database does.
import { DeadlinePassed } from '../../store/health.ts';

/** How long a request may wait on the database in all; past it, 503. */
export const REQUEST_BUDGET_MS = 5_000;

/** The promise's result, or DeadlinePassed once Date.now() reaches deadline (the promise
 * goes on; what it brings later is dropped). For reads, which change nothing. */
export function byDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const passed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed()), Math.max(0, deadline - Date.now()));
  });
  promise.catch(() => undefined);
  return Promise.race([promise, passed]).finally(() => clearTimeout(timer));
}
