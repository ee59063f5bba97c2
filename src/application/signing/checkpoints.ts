// The log's checkpoints and proofs, as GET /v1/log/checkpoint and /v1/log/proof/* answer
// them: each a handful of stored tree nodes read by key, never the events. The instance
// keeps its newest checkpoint and signs at most one per tree size: the checkpoints its
// batches signed are kept as they commit, and a size only an operator command wrote is
// signed when first asked for.
import { RETIREMENT_CHECK_MS } from '../../store/retired-key.ts';
import { retiredProblem } from '../../store/signing-keys.ts';
import {
  frontierNodes,
  inclusionRanges,
  consistencyRanges,
  nodeId,
  nodesOf,
  proofHashes,
  treeRoot,
  type NodeKey,
} from '../../support/merkle.ts';
import { checkpointText, ORIGIN_PREFIX, originOf, parseCheckpoint, parseNote, signedNote } from '../../support/checkpoint.ts';
import type { AuditReads } from '../../store/audit-reads.ts';
import type { Signer } from '../../support/signing.ts';
import type { EventLog } from '../../store/event-log.ts';

/** An instance started without a signing key (some tests, tools) signs no checkpoint. */
export class NoSigningKey extends Error {
  override name = 'NoSigningKey';
  constructor() {
    super('this instance has no signing key: it signs no checkpoint');
  }
}

/** A size past the log's: nothing to prove yet. */
export class TreeSizePastHead extends Error {
  override name = 'TreeSizePastHead';
  constructor(
    readonly size: number,
    readonly head: number,
  ) {
    super(`the log holds ${head} events: there is no tree of size ${size} yet`);
  }
}

/** The instance's key was retired: it signs nothing more (no checkpoint, no head). */
export class SigningKeyRetired extends Error {
  override name = 'SigningKeyRetired';
}

export interface Checkpoints {
  /** The signed checkpoint of the log as it stands (exact bytes). Throws SigningKeyRetired
   * once this instance's key is retired (known within RETIREMENT_CHECK_MS). */
  current(): Promise<string>;
  /** The same, with the head it is of: the checkpoint's size is that head's seq. */
  currentWithHead(): Promise<{ head: LogHead; note: string }>;
  /** The inclusion path of the event seq in the tree of size events, bottom up. */
  inclusion(seq: number, size: number): Promise<Buffer[]>;
  /** The consistency proof from the tree of from events to the one of to, bottom up. */
  consistency(from: number, to: number): Promise<Buffer[]>;
  /** A checkpoint a committed batch signed: kept, so that its size is not signed again. */
  committed(note: string): void;
}

interface Deps {
  store: Pick<AuditReads, 'logHead' | 'treeNodes' | 'signingKeys'>;
  signer?: Signer;
  now: () => number;
  /** Told of each tree this instance's key has published (signed-state.ts). */
  onPublished?: (logId: string, size: number, root: Buffer) => void;
}

type LogHead = Awaited<ReturnType<AuditReads['logHead']>>;

/** Throws SigningKeyRetired once the key log retires signer's key: it is read at most once
 * per the revocation bound, and a retirement, once seen, is final. */
function retirementWatch(store: Pick<AuditReads, 'signingKeys'>, signer: Signer | undefined, now: () => number) {
  let retired: string | undefined;
  let checkedAt = -Infinity;
  return async (): Promise<void> => {
    if (signer && retired === undefined && now() - checkedAt >= RETIREMENT_CHECK_MS) {
      retired = retiredProblem(await store.signingKeys(), signer.keyId);
      checkedAt = now();
    }
    if (retired !== undefined) throw new SigningKeyRetired(retired);
  };
}

/** The checkpoint of the tree of the head's events, signed now, and that tree's root. */
async function signCheckpoint(
  head: LogHead,
  store: Pick<AuditReads, 'treeNodes'>,
  signer: Signer,
  now: () => number,
): Promise<{ note: string; root: Buffer }> {
  const root = treeRoot(head.seq, await lookupOf(store, frontierNodes(head.seq)));
  const origin = originOf(head.logId);
  const text = checkpointText({ origin, size: head.seq, root, keys: head.keys, time: new Date(now()).toISOString() });
  return { note: signedNote(text, origin, Buffer.from(signer.publicKey, 'base64url'), signer.sign(text)), root };
}

/** The stored nodes of these keys, read at once, as a lookup. */
async function lookupOf(store: Pick<AuditReads, 'treeNodes'>, keys: readonly NodeKey[]) {
  const nodes = await store.treeNodes(keys);
  return (level: number, index: number) => nodes.get(nodeId(level, index));
}

export function makeCheckpoints({ store, signer, now, onPublished = () => {} }: Deps): Checkpoints {
  let newest: { size: number; note: string } | undefined;
  // Asked while one is being signed for the same size: the same answer.
  let signing: { size: number; made: Promise<{ note: string; root: Buffer }> } | undefined;
  const mayStillSign = retirementWatch(store, signer, now);
  const keep = (size: number, note: string, logId: string, root: Buffer) => {
    if (!newest || size >= newest.size) newest = { size, note };
    // After the answers that carry it: setImmediate runs once this turn's writes are out.
    setImmediate(() => onPublished(logId, size, root));
  };

  const sign = async (): Promise<{ head: LogHead; note: string }> => {
    await mayStillSign();
    const head = await store.logHead();
    if (newest?.size === head.seq) return { head, note: newest.note };
    if (!signer) throw new NoSigningKey();
    if (signing?.size === head.seq) return { head, note: (await signing.made).note };
    const made = signCheckpoint(head, store, signer, now);
    signing = { size: head.seq, made };
    try {
      const { note, root } = await made;
      keep(head.seq, note, head.logId, root);
      return { head, note };
    } finally {
      if (signing?.made === made) signing = undefined;
    }
  };

  const proof = async (ranges: ReturnType<typeof inclusionRanges>, size: number) => {
    const head = (await store.logHead()).seq;
    if (size > head) throw new TreeSizePastHead(size, head);
    return proofHashes(ranges, await lookupOf(store, nodesOf(ranges)));
  };

  return {
    current: async () => (await sign()).note,
    currentWithHead: sign,
    inclusion: (seq, size) => (seq > size ? Promise.reject(new RangeError('seq past size')) : proof(inclusionRanges(seq - 1, size), size)),
    consistency: (from, to) => proof(consistencyRanges(from, to), to),
    committed(note) {
      if (note === newest?.note) return;
      const parsed = parseNote(note);
      if (parsed instanceof Error) return;
      const checkpoint = parseCheckpoint(parsed.text);
      if (!(checkpoint instanceof Error)) keep(checkpoint.size, note, checkpoint.origin.slice(ORIGIN_PREFIX.length), checkpoint.root);
    },
  };
}

/** The store as the command handler writes to it, each committed batch's checkpoint kept. */
export function keepingCheckpoints<S extends Pick<EventLog, 'appendBatch'>>(store: S, checkpoints: Checkpoints): S {
  return {
    ...store,
    appendBatch: async (submissions, options) => {
      const outcomes = await store.appendBatch(submissions, options);
      for (const outcome of outcomes) if (outcome.ok) for (const a of outcome.value) if (a.checkpoint) checkpoints.committed(a.checkpoint);
      return outcomes;
    },
  };
}
