// GET /v1/log/head: the newest event's seq and hash and the key log's head, as the
// digests verify-log --digest takes, signed by this instance's key, with the checkpoint
// of the log as it stands. An auditor keeps them somewhere the database's owner cannot
// change; any later log must still extend them.
// GET /v1/log/signing-keys: the public keys those signatures are checked with, as the
// key log records them, with each one's verifier key (the signed-note form), when it was
// retired, and the endorsement by which a key already trusted vouched for it.
// GET /v1/log/checkpoint and /v1/log/proof/{inclusion,consistency}: the Merkle tree's
// signed checkpoint and its RFC 9162 proofs, a few hundred bytes whatever the log's size.
import { NoSigningKey, type Checkpoints } from '../../application/signing/checkpoints.ts';
import { logHeadJson } from '../../application/read/log-head.ts';
import { publishedSigningKeys, type LogReadSource } from '../../application/read/log-keys.ts';
import type { Signer } from '../../support/signing.ts';
import { HttpError } from '../stages/errors.ts';
import { MissingNode } from '../../support/merkle.ts';
import type { Route } from './router.ts';
import { readsOnNextTurn } from '../stages/key-fairness.ts';
import type { Middleware } from 'koa';
import type { OpenApiDocument } from '../../openapi.ts';
import { operationParameters, parameterJudge, queryShapeJudge, spoken, type Refusal } from '../input/parameters.ts';

interface LogRouteDeps {
  store: LogReadSource;
  checkpoints: Checkpoints;
  now: () => number;
  /** The instance's signing key; the service always has one. */
  signer?: Signer;
  /** The document the proofs' query is judged by. */
  openapi: OpenApiDocument;
}

const NO_STORE = { 'Cache-Control': 'no-store' };

/** A proof's sizes and seqs, as the document's pattern refuses them (a tree's size is
 * counted exactly in a JavaScript number, up to 2^53 - 1). */
const notACount: Refusal = (name) =>
  new HttpError(400, 'bad_request', `${name} must be a decimal integer from 1 to ${Number.MAX_SAFE_INTEGER} (no sign, no leading zeros)`);

const QUERY_SHAPE = {
  unknown: (name: string, names: readonly string[]) =>
    new HttpError(400, 'bad_request', `unknown query parameter ${JSON.stringify(name.slice(0, 100))}: only ${spoken(names)}`),
  repeated: (name: string) => new HttpError(400, 'bad_request', `${name} is given more than once`),
};

/** A stage that judges the route's query from the document (only its parameters, each
 * once): afterwards each name is a count. */
function countsJudged(openapi: OpenApiDocument, template: string, names: readonly [string, string]): Middleware {
  const route = { method: 'GET', template };
  const shape = queryShapeJudge(operationParameters(openapi, route), QUERY_SHAPE);
  const judge = parameterJudge(openapi, route, Object.fromEntries(names.map((n) => [n, notACount])));
  return (ctx, next) => {
    shape(ctx.query);
    judge(ctx);
    return next();
  };
}

const countsOf = (query: Record<string, unknown>, names: readonly [string, string]) =>
  names.map((n) => Number(query[n])) as [number, number];

export function logRoutes({ store, checkpoints, now, signer, openapi }: LogRouteDeps): Route[] {
  const proofBody = (names: Record<string, number>, hashes: Buffer[]) => ({
    headers: NO_STORE,
    body: { ...names, hashes: hashes.map((h) => h.toString('base64')) },
  });
  return [
    {
      method: 'GET',
      template: '/v1/log/head',
      handler: async () => {
        // The head answered is the one the checkpoint is of, read once: its size is the
        // head's seq even while commits land. An instance whose key was retired signs no
        // head (SigningKeyRetired: 503, as its writes). A tree that lacks a node (edited
        // behind the triggers) gives no checkpoint, nor does an instance without a key, but
        // the head is still answered: verify-log --url reads it to say what is broken.
        const signed = await checkpoints.currentWithHead().catch((error: unknown) => {
          if (error instanceof MissingNode || error instanceof NoSigningKey) return undefined;
          throw error;
        });
        const head = signed?.head ?? (await store.logHead());
        return { headers: NO_STORE, body: { ...logHeadJson(head, now(), signer), ...(signed ? { checkpoint: signed.note } : {}) } };
      },
    },
    {
      method: 'GET',
      template: '/v1/log/signing-keys',
      handler: async () => ({ headers: NO_STORE, body: await publishedSigningKeys(store) }),
    },
    {
      method: 'GET',
      template: '/v1/log/checkpoint',
      handler: async () => ({ headers: NO_STORE, type: 'text/plain; charset=utf-8', body: await checkpoints.current() }),
    },
    {
      method: 'GET',
      template: '/v1/log/proof/inclusion',
      stages: [countsJudged(openapi, '/v1/log/proof/inclusion', ['seq', 'size']), readsOnNextTurn],
      handler: async (ctx) => {
        const [seq, size] = countsOf(ctx.query, ['seq', 'size']);
        if (seq > size) throw new HttpError(400, 'bad_request', `seq (${seq}) must not be past size (${size})`);
        return proofBody({ seq, size }, await checkpoints.inclusion(seq, size));
      },
    },
    {
      method: 'GET',
      template: '/v1/log/proof/consistency',
      stages: [countsJudged(openapi, '/v1/log/proof/consistency', ['from', 'to']), readsOnNextTurn],
      handler: async (ctx) => {
        const [from, to] = countsOf(ctx.query, ['from', 'to']);
        if (from > to) throw new HttpError(400, 'bad_request', `from (${from}) must not be past to (${to})`);
        return proofBody({ from, to }, await checkpoints.consistency(from, to));
      },
    },
  ];
}
