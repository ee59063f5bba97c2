// Every failure leaves as {code, message, status}. HttpError is what the layers throw;
// errorHandler, first in the chain, renders it, and turns anything else into a 503 (the
// database is unavailable) or a 500 that reveals nothing internal.
import type { Middleware } from 'koa';
import { repeatedWarnings, type Logger, type RepeatedWarning } from '../logger.ts';
import { CommitFailed } from '../group-commit.ts';
import { CommitUnconfirmed } from '../store/event-log.ts';
import { StoreUnavailable, type StorageFault } from '../store/health.ts';

/** The fixed set of error codes: the README and the OpenAPI enum list the same. */
export const ERROR_CODES = [
  'bad_request',
  'invalid_pet_id',
  'missing_body',
  'malformed_json',
  'invalid_body',
  'unauthorized',
  'forbidden',
  'not_found',
  'pet_not_found',
  'method_not_allowed',
  'precondition_failed',
  'payload_too_large',
  'unsupported_media_type',
  'request_timeout',
  'expectation_failed',
  'headers_too_large',
  'internal_error',
  'unavailable',
  'invalid_idempotency_key',
  'idempotency_key_reused',
  'idempotency_key_in_flight',
  'commit_unconfirmed',
  'cursor_past_head',
  'cursor_not_in_log',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

// Errors thrown by the libraries below us (http-errors) carry only a status.
const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

function toHttpError(err: unknown, fault: StorageFaultOf): HttpError | undefined {
  if (err instanceof HttpError) return err;
  const e = err as { status?: unknown; expose?: unknown; message?: unknown; code?: unknown };
  if (err instanceof CommitUnconfirmed) {
    return new HttpError(
      503,
      'commit_unconfirmed',
      'the write may have been applied: its commit was sent but could not be confirmed in time; read the entry, or retry with the same Idempotency-Key',
      { 'Retry-After': '1' },
    );
  }
  if (err instanceof CommitFailed || err instanceof StoreUnavailable || fault(err)) {
    return new HttpError(503, 'unavailable', 'the database is unavailable; retry later', {
      'Retry-After': '1',
    });
  }
  const code = typeof e?.status === 'number' ? CODE_OF_STATUS[e.status] : undefined;
  if (code && e.expose === true && typeof e.message === 'string') {
    return new HttpError(e.status as number, code, e.message);
  }
  return undefined;
}

/** What the store says an error of its own means (InventoryStore.fault). */
export type StorageFaultOf = (error: unknown) => StorageFault | undefined;

/**
 * fault tells contention and storage faults (503) from bugs (500); onUnavailable hears
 * of every 503 that a failure caused (storage health listens).
 */
export function errorHandler(
  logger: Logger,
  { fault = () => undefined, onUnavailable = () => {} }: { fault?: StorageFaultOf; onUnavailable?: (error: unknown) => void } = {},
): Middleware {
  // On a full disk every request fails alike: a line (and a stack) each would flood the
  // log; once a second with a count says the same.
  const warnRepeated = repeatedWarnings(logger);
  return async function renderErrors(ctx, next) {
    let error: HttpError;
    try {
      await next();
      // Nothing answered: an unknown path, or a known path with another method
      // (the router has then set 405 or 501 and the Allow header).
      if (ctx.body != null || (ctx.status !== 404 && ctx.status !== 405 && ctx.status !== 501)) return;
      // The router answers 501 for a method it does not know at all; on a path that
      // exists (Allow lists its methods) that is a 405, on any other path a 404.
      const allow = ctx.response.get('Allow');
      error =
        ctx.status === 404 || allow === ''
          ? new HttpError(404, 'not_found', `no such resource: ${ctx.method} ${ctx.path.slice(0, 200)}`)
          : new HttpError(405, 'method_not_allowed', `${ctx.method} is not allowed here; allowed: ${allow}`);
    } catch (err) {
      const known = toHttpError(err, fault);
      if (known) {
        error = known;
        if (known.status >= 500) {
          warnUnavailable(warnRepeated, fault(err), err, known);
          onUnavailable(err);
        }
      } else {
        logger.error({ requestId: ctx.state.requestId, err: describe(err) }, 'unexpected error');
        error = new HttpError(
          500,
          'internal_error',
          `internal error; quote request id ${ctx.state.requestId ?? 'unknown'} when reporting it`,
        );
      }
    }
    ctx.set(error.headers);
    ctx.status = error.status;
    ctx.type = 'application/json';
    ctx.body = errorBody(error);
  };
}

/** The Error body of an HttpError, as every error answer carries it. */
export function errorBody(error: HttpError): string {
  return JSON.stringify({ code: error.code, message: error.message, status: error.status });
}

/**
 * A storage fault is logged by its code, with no stack: the stack of a full disk says
 * nothing new. A 503 the service chose is logged by its message; a commit that failed
 * for another reason keeps its stack, since that is a bug to find. The access log still
 * has each request with its id and status.
 */
function warnUnavailable(warn: RepeatedWarning, fault: StorageFault | undefined, err: unknown, known: HttpError): void {
  if (fault) warn(`fault:${fault.code}`, 1, { fault: fault.code, kind: fault.kind }, known.message);
  else if (err instanceof HttpError) warn(`answer:${known.message}`, 1, { code: known.code }, known.message);
  else warn(`error:${(err as Error)?.name}`, 1, { err: describe(err) }, known.message);
}

function describe(err: unknown): Record<string, unknown> {
  const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown };
  return { name: e?.name, message: e?.message, code: e?.code, stack: e?.stack };
}
