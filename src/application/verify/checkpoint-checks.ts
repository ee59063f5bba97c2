// What the monitor and the receipt checker ask of a running service and how they judge
// its answers: a signed checkpoint opened with the pinned keys, and the consistency proof
// that a newer tree extends an older one. Each answer is a few hundred bytes, whatever the
// log's size, and is checked here, never trusted.
import { parseCheckpoint, parseNote, type Checkpoint, type Verifier } from '../../support/checkpoint.ts';
import { rootFromInclusion, verifyConsistency } from '../../support/merkle-verify.ts';
import { trustedSigners, type ListedKey } from '../signing/trust.ts';
import { logSource } from '../mirror/log-source.ts';
import { withTileProofs } from '../mirror/tile-proofs.ts';

/** GETs a path of the service with the key, its body as text; throws on anything but 200. */
export type TextGet = (path: string) => Promise<string>;

interface CountingGet {
  get: TextGet;
  /** The bytes of every body downloaded so far. */
  bytes(): number;
}

/** The service's (or a copy's) answers as text; a proof route that a copy served by a
 * static server lacks is answered from its tiles. */
export function serviceGetter(baseUrl: string, key: string, timeoutMs = 10_000): CountingGet {
  const source = logSource(baseUrl, key, timeoutMs);
  return { bytes: () => source.downloaded(), get: withTileProofs(source) };
}

export interface SignedCheckpoint extends Checkpoint {
  /** The signed note exactly as served. */
  note: string;
}

/** A checkpoint note opened with the pinned keys, or what is wrong with it (problem, and whether it is a bad signature). */
export function openCheckpoint(
  note: string,
  pinned: readonly Verifier[],
  who = 'monitor',
): SignedCheckpoint | { problem: string; unsigned: boolean } {
  const parsed = parseNote(note);
  if (parsed instanceof Error) return { problem: `it is no signed note: ${parsed.message}`, unsigned: false };
  const checkpoint = parseCheckpoint(parsed.text);
  if (checkpoint instanceof Error) return { problem: `it is no checkpoint: ${checkpoint.message}`, unsigned: false };
  if (trustedSigners(parsed, pinned).length === 0) return { problem: `it is signed by a key this ${who} does not trust`, unsigned: true };
  return { ...checkpoint, note };
}

/** The newest checkpoint the service serves, opened with the pinned keys, or why it cannot be trusted. */
export async function newestCheckpoint(get: TextGet, pinned: readonly Verifier[], who = 'monitor'): Promise<SignedCheckpoint | string> {
  const opened = openCheckpoint(await get('/v1/log/checkpoint'), pinned, who);
  return 'problem' in opened ? `the newest checkpoint: ${opened.problem}` : opened;
}

function hashesOf(body: string, what: string): Buffer[] {
  const answer = JSON.parse(body) as { hashes?: unknown };
  const hashes = answer.hashes;
  if (!Array.isArray(hashes) || !hashes.every((h) => typeof h === 'string')) throw new Error(`the ${what} answer has no list of hashes`);
  return hashes.map((h: string) => Buffer.from(h, 'base64'));
}

/** Why the tree of `now` does not extend the one of `old` (their consistency proof fails); undefined when it does. */
export async function extensionProblem(get: TextGet, old: Checkpoint, now: Checkpoint): Promise<string | undefined> {
  if (now.origin !== old.origin) return `the service signs for ${now.origin}, not for ${old.origin}`;
  if (now.size < old.size)
    return `the log holds ${now.size} events, fewer than the ${old.size} of a checkpoint it signed: it was cut or restored`;
  if (old.size === 0) return undefined;
  if (now.size === old.size)
    return now.root.equals(old.root) ? undefined : `two checkpoints of ${old.size} events disagree on the root: the log was rewritten`;
  const proof = hashesOf(await get(`/v1/log/proof/consistency?from=${old.size}&to=${now.size}`), 'consistency proof');
  return verifyConsistency(old.size, now.size, old.root, now.root, proof)
    ? undefined
    : `the tree of ${now.size} events does not extend the checkpoint of ${old.size}: the log was rewritten`;
}

/** Why the event (seq, leaf) is not in the checkpoint's tree by this path; undefined when it is. */
export function inclusionProblem(seq: number, leaf: Buffer, checkpoint: Checkpoint, proof: readonly Buffer[]): string | undefined {
  if (seq > checkpoint.size) return `seq ${seq} is past the checkpoint's ${checkpoint.size} events`;
  const root = rootFromInclusion(seq - 1, checkpoint.size, leaf, proof);
  return root?.equals(checkpoint.root)
    ? undefined
    : `the inclusion proof of seq ${seq} does not lead to the root of the checkpoint of ${checkpoint.size} events`;
}

/** The inclusion proof the service gives of seq in the tree of size events. */
export async function inclusionProof(get: TextGet, seq: number, size: number): Promise<Buffer[]> {
  return hashesOf(await get(`/v1/log/proof/inclusion?seq=${seq}&size=${size}`), 'inclusion proof');
}

/** The keys the log lists (GET /v1/log/signing-keys), unpinned, each with what trust needs. */
export async function listedKeys(get: TextGet): Promise<ListedKey[]> {
  const keys = JSON.parse(await get('/v1/log/signing-keys')) as Partial<Record<keyof ListedKey, unknown>>[];
  return keys.map((k, i) => {
    const text = (v: unknown) => typeof v === 'string';
    const ok =
      text(k.keyId) &&
      text(k.verifierKey) &&
      text(k.addedAt) &&
      (k.retiredAt === null || text(k.retiredAt)) &&
      (k.endorsedBy === null || text(k.endorsedBy));
    if (!ok) throw new Error(`signing key ${i + 1} of GET /v1/log/signing-keys lacks keyId, verifierKey, addedAt, retiredAt or endorsedBy`);
    return k as ListedKey;
  });
}
