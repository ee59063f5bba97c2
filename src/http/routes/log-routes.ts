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
import { withInput, type Route } from './router.ts';
import { readsOnNextTurn } from '../stages/key-fairness.ts';
import type { JudgedParameters } from '../input/operation-input.ts';

interface LogRouteDeps {
  store: LogReadSource;
  checkpoints: Checkpoints;
  now: () => number;
  /** The instance's signing key; the service always has one. */
  signer?: Signer;
}

const NO_STORE = { 'Cache-Control': 'no-store' };

/** A proof's sizes and seqs, as the router judged them (a tree's size is counted exactly
 * in a JavaScript number, up to 2^53 - 1, the most the document's schema allows). */
const countsOf = (parameters: JudgedParameters, names: readonly [string, string]) =>
  names.map((n) => Number(parameters[n])) as [number, number];

/** A proof's route: its two counts (the first not past the second), then the proof. */
function proofRoute(
  kind: 'inclusion' | 'consistency',
  operation: string,
  names: readonly [string, string],
  prove: (a: number, b: number) => Promise<Buffer[]>,
): Route {
  const [first, second] = names;
  return {
    method: 'GET',
    template: `/v1/log/proof/${kind}`,
    operation,
    stages: [readsOnNextTurn],
    handler: withInput(
      (p) => countsOf(p, names),
      async (_ctx, [a, b]) => {
        if (a > b) throw new HttpError(400, 'bad_request', `${first} (${a}) must not be past ${second} (${b})`);
        const hashes = await prove(a, b);
        return { headers: NO_STORE, body: { [first]: a, [second]: b, hashes: hashes.map((h) => h.toString('base64')) } };
      },
    ),
  };
}

export function logRoutes({ store, checkpoints, now, signer }: LogRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      template: '/v1/log/head',
      operation: 'getLogHead',
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
      operation: 'getSigningKeys',
      handler: async () => ({ headers: NO_STORE, body: await publishedSigningKeys(store) }),
    },
    {
      method: 'GET',
      template: '/v1/log/checkpoint',
      operation: 'getCheckpoint',
      handler: async () => ({ headers: NO_STORE, type: 'text/plain; charset=utf-8', body: await checkpoints.current() }),
    },
    proofRoute('inclusion', 'getInclusionProof', ['seq', 'size'], (seq, size) => checkpoints.inclusion(seq, size)),
    proofRoute('consistency', 'getConsistencyProof', ['from', 'to'], (from, to) => checkpoints.consistency(from, to)),
  ];
}
