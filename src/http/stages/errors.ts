// Every failure leaves as {code, message, status}. The app's error boundary renders
// what is thrown below it: by the table of errors (ERROR_MAP), an HttpError as it is, the
// store's faults as 503, anything else as a 500 that reveals nothing internal. A command's
// refusal is a result, not an error: refusalAnswer says how it is answered.
import { NoSigningKey, SigningKeyRetired, TreeSizePastHead } from '../../application/signing/checkpoints.ts';
import type { Context, Middleware } from 'koa';
import type { CommandRefusal } from '../../application/write/command-result.ts';
import { CursorRefused, FeedKeyFull, FeedQueryInvalid, FeedUnavailable } from '../../feed/errors.ts';
import { entryTag, readConditions, weakTagNote } from '../input/preconditions.ts';
import { repeatedWarnings, type Logger, type RepeatedWarning } from '../../support/logger.ts';
import { CommitFailed } from '../../application/write/group-commit.ts';
import {
  ChainHeadMismatch,
  chainHeadMismatchIn,
  CommitUnconfirmed,
  StoreUnavailable,
  type StorageFault,
} from '../../application/write/storage-failures.ts';

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
  'tree_size_past_head',
  'too_many_requests',
  'not_implemented',
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

/** How one kind of error is answered; ctx: the request it failed (a message may quote it). */
interface ErrorMapping<E extends Error = Error> {
  kind: abstract new (...args: never[]) => E;
  answer(error: E, ctx: Context): HttpError;
}

function mapping<E extends Error>(kind: ErrorMapping<E>['kind'], answer: (error: E, ctx: Context) => HttpError): ErrorMapping {
  return { kind, answer };
}

const UNAVAILABLE = () => new HttpError(503, 'unavailable', 'the database is unavailable; retry later', { 'Retry-After': '1' });
// The chain head moved behind the service's back: the answer says so, as /readyz does.
const HEAD_MISMATCH = (error: ChainHeadMismatch) => new HttpError(503, 'unavailable', error.message, { 'Retry-After': '1' });

/** The answer to a command's refusal (ctx: the request refused; a message may quote it). */
export function refusalAnswer(refusal: CommandRefusal, ctx: Context): HttpError {
  switch (refusal.reason) {
    case 'not_tracked':
      return new HttpError(404, 'pet_not_found', `pet ${refusal.petId} is not tracked`);
    case 'precondition_failed': {
      const current = entryTag(refusal.currentVersion);
      const message =
        refusal.failed === 'if-none-match-failed'
          ? `If-None-Match matches or cannot be read: pet ${refusal.petId} is at version ${current}`
          : `If-Match does not match: pet ${refusal.petId} is at version ${current}${weakTagNote(readConditions(ctx.req.headers))}`;
      return new HttpError(412, 'precondition_failed', message, { ETag: current });
    }
    case 'idempotency_key_reused':
      return new HttpError(
        422,
        'idempotency_key_reused',
        'this Idempotency-Key was used for another request (another body, path or precondition): use a new key for a new request',
      );
    case 'idempotency_key_in_flight':
      return new HttpError(
        409,
        'idempotency_key_in_flight',
        'a request with this Idempotency-Key is still being processed; retry after its answer',
        {
          'Retry-After': '1',
        },
      );
    // No request tracks a pet (an operator does): this refusal here is a bug (500).
    case 'already_tracked':
      throw new Error(`pet ${refusal.petId} is tracked already, which no request can be told`);
    default:
      return refusal satisfies never;
  }
}

/**
 * Every error the layers below the edge throw, and its answer: the first mapping whose
 * kind the error is wins. Handlers and the modules below them throw their own errors;
 * only this table (and HttpError, already an answer) says what HTTP makes of them.
 */
const ERROR_MAP: readonly ErrorMapping[] = [
  mapping(HttpError, (error) => error),
  mapping(
    CommitUnconfirmed,
    () =>
      new HttpError(
        503,
        'commit_unconfirmed',
        'the write may have been applied: its commit was sent but could not be confirmed in time; read the entry, or retry with the same Idempotency-Key',
        { 'Retry-After': '1' },
      ),
  ),
  mapping(CommitFailed, (error) => {
    const mismatch = chainHeadMismatchIn(error);
    return mismatch ? HEAD_MISMATCH(mismatch) : UNAVAILABLE();
  }),
  mapping(ChainHeadMismatch, HEAD_MISMATCH),
  mapping(StoreUnavailable, UNAVAILABLE),
  mapping(FeedQueryInvalid, (error) => new HttpError(400, 'bad_request', error.message)),
  mapping(
    CursorRefused,
    (error) => new HttpError(409, error.reason === 'past_head' ? 'cursor_past_head' : 'cursor_not_in_log', error.message),
  ),
  mapping(SigningKeyRetired, (error) => new HttpError(503, 'unavailable', error.message, { 'Retry-After': '1' })),
  mapping(TreeSizePastHead, (error) => new HttpError(409, 'tree_size_past_head', error.message)),
  mapping(NoSigningKey, (error) => new HttpError(503, 'unavailable', error.message)),
  mapping(
    FeedUnavailable,
    (error) => new HttpError(503, 'unavailable', error.message, { 'Retry-After': error.reason === 'shutting_down' ? '1' : '5' }),
  ),
  mapping(FeedKeyFull, (error) => new HttpError(429, 'too_many_requests', error.message, { 'Retry-After': '1' })),
];

// Errors thrown by the libraries below us (http-errors) carry only a status.
const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/** The answer to an error: by the table, then the store's faults (503), then a library's
 * exposed status; undefined for anything else (a bug: 500). */
function mapError(err: unknown, ctx: Context, fault: StorageFaultOf, map: readonly ErrorMapping[] = ERROR_MAP): HttpError | undefined {
  // A fault that retrying cannot mend is answered with what the store says to do.
  const advice = fault(err)?.advice;
  if (advice) return new HttpError(503, 'unavailable', advice, { 'Retry-After': '1' });
  for (const m of map) if (err instanceof m.kind) return m.answer(err, ctx);
  if (fault(err)) return UNAVAILABLE();
  const e = err as { status?: unknown; expose?: unknown; message?: unknown };
  const code = typeof e?.status === 'number' ? CODE_OF_STATUS[e.status] : undefined;
  if (code && e.expose === true && typeof e.message === 'string') return new HttpError(e.status as number, code, e.message);
  return undefined;
}

/** What the store says an error of its own means (InventoryStore.fault). */
type StorageFaultOf = (error: unknown) => StorageFault | undefined;

/**
 * The error boundary, second of the app's stages: every error thrown below it is answered as the
 * table maps it. fault tells contention and storage faults (503) from bugs (500);
 * onUnavailable hears of every 503 that a failure caused (storage health listens).
 */
export function errorBoundary(
  logger: Logger,
  {
    fault = () => undefined,
    onUnavailable = () => {},
    map = ERROR_MAP,
  }: { fault?: StorageFaultOf; onUnavailable?: (error: unknown) => void; map?: readonly ErrorMapping[] } = {},
): Middleware {
  // On a full disk every request fails alike: a line (and a stack) each would flood the
  // log; once a second with a count says the same.
  const warnRepeated = repeatedWarnings(logger);
  const render = (ctx: Context, err: unknown) => {
    let error = mapError(err, ctx, fault, map);
    if (error) {
      // A 501 says what the service does not do for this request (a transfer coding it
      // does not apply), not that it is unwell.
      if (error.status >= 500 && error.status !== 501) {
        warnUnavailable(warnRepeated, fault(err), err, error);
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
    ctx.set(error.headers);
    ctx.status = error.status;
    ctx.type = 'application/json';
    ctx.body = errorBody(error);
  };
  return function errorBoundary(ctx, next) {
    return next().catch((err: unknown) => render(ctx, err));
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
  // A state, not an event: storage health logs it once when it starts (onUnavailable).
  if (chainHeadMismatchIn(err)) return;
  if (fault) warn(`fault:${fault.code}`, 1, { fault: fault.code, kind: fault.kind }, known.message);
  else if (err instanceof HttpError) warn(`answer:${known.message}`, 1, { code: known.code }, known.message);
  else warn(`error:${(err as Error)?.name}`, 1, { err: describe(err) }, known.message);
}

function describe(err: unknown): Record<string, unknown> {
  const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown };
  return { name: e?.name, message: e?.message, code: e?.code, stack: e?.stack };
}
