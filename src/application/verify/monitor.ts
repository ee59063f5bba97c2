// The monitor (verify-log --checkpoint): keeps the newest checkpoint it has verified and,
// on each run, checks that the service's newest one is signed by a trusted key (pinned,
// or endorsed by a trusted one) within that key's time in the key log, and extends the
// kept one (a consistency proof). That costs a few hundred bytes whatever the log's size;
// only the first run, with nothing kept, reads the whole log once.
import { eventLeaf } from '../../support/merkle.ts';
import {
  extensionProblem,
  inclusionProblem,
  inclusionProof,
  listedKeys,
  newestCheckpoint,
  openCheckpoint,
  type SignedCheckpoint,
  type TextGet,
} from './checkpoint-checks.ts';
import { ORIGIN_PREFIX, type Verifier } from '../../support/checkpoint.ts';
import { signedOutsideKeyTime, trustedKeys, verifiersOf, type ListedKey } from '../signing/trust.ts';

export type WholeLogVerdict =
  { ok: true; events: number; head: { seq: number; hash: string } } | { ok: false; reason: string; seq?: number };

interface MonitorRun {
  get: TextGet;
  /** The kept checkpoint (FILE), undefined on a first run. */
  kept?: string;
  /** The pinned verifier keys (FILE.keys), undefined when none were kept yet. */
  keptKeys?: string[];
  /** Verifier keys given now (--trust): the first run's pins, or more pins later. */
  trust: readonly string[];
  /** The first run's check of the whole log, ending at its signed head. */
  wholeLog(): Promise<WholeLogVerdict>;
}

type MonitorVerdict =
  { ok: true; checkpoint: SignedCheckpoint; keys: string[]; report: string[] } | { ok: false; reason: string; report: string[] };

/** A kept file that holds no checkpoint: an error of the monitor's own files, never a pass. */
export class KeptFileError extends Error {
  override name = 'KeptFileError';
}

/** The keys this run pins: those kept and given, or on first use the log's first key (the
 * keys endorsed from it are trusted through their endorsements, each checked). */
function pins(run: Pick<MonitorRun, 'keptKeys' | 'trust'>, logKeys: readonly ListedKey[], report: string[]): string[] {
  const keys = [...(run.keptKeys ?? []), ...run.trust];
  const first = logKeys[0];
  if (run.keptKeys === undefined && run.trust.length === 0 && first) {
    report.push(
      "trusting the log's first key on first use, and the keys endorsed from it: compare them with the operator's out of band",
      `  ${first.verifierKey}`,
    );
    keys.push(first.verifierKey);
  }
  return [...new Set(keys)];
}

/** Why a key the log lists is not trusted, said loudly: it is never pinned without --trust. */
function untrusted(key: ListedKey): string {
  const why =
    key.endorsedBy === null
      ? "it has no endorsement (added --unendorsed, or not by the operator's tools)"
      : "its endorsement is signed by no trusted key within that key's time, or names another log or key";
  return `UNTRUSTED: key ${key.keyId} is listed by the log but not trusted: ${why}; a checkpoint it signs is BROKEN for this monitor until its verifier key, confirmed out of band, is pinned with --trust: ${key.verifierKey}`;
}

/** The first run: the whole log, then the newest checkpoint must hold the signed head that ends it. */
async function firstRun(run: MonitorRun, pinned: readonly Verifier[], report: string[]): Promise<SignedCheckpoint | string> {
  const whole = await run.wholeLog();
  if (!whole.ok) return `${whole.seq === undefined ? '' : `at seq ${whole.seq}: `}${whole.reason}`;
  report.push(`ok: ${whole.events} events through the API, chain intact, signed head at seq ${whole.head.seq} valid`);
  const checkpoint = await newestCheckpoint(run.get, pinned);
  if (typeof checkpoint === 'string') return checkpoint;
  if (checkpoint.size < whole.head.seq)
    return `the newest checkpoint holds ${checkpoint.size} events, fewer than the signed head's ${whole.head.seq}`;
  if (whole.head.seq > 0) {
    const proof = await inclusionProof(run.get, whole.head.seq, checkpoint.size);
    const wrong = inclusionProblem(whole.head.seq, eventLeaf(whole.head.hash), checkpoint, proof);
    if (wrong) return `the signed head is not in the newest checkpoint's tree: ${wrong}`;
  }
  report.push(`ok: the newest checkpoint (${checkpoint.size} events) is signed by a trusted key and holds the signed head`);
  return checkpoint;
}

/** A later run: the newest checkpoint must extend the kept one. */
async function laterRun(
  run: MonitorRun,
  pinned: readonly Verifier[],
  kept: SignedCheckpoint,
  report: string[],
): Promise<SignedCheckpoint | string> {
  const checkpoint = await newestCheckpoint(run.get, pinned);
  if (typeof checkpoint === 'string') return checkpoint;
  const wrong = await extensionProblem(run.get, kept, checkpoint);
  if (wrong !== undefined) return wrong;
  report.push(
    `ok: the newest checkpoint (${checkpoint.size} events) is signed by a trusted key and extends the kept one (${kept.size} events)`,
  );
  return checkpoint;
}

/** The pinned keys and those they endorsed (reported), and the keys the log lists: the
 * monitor's trust, which a copy (scripts/mirror) keeps the same way. */
export async function trust(run: Pick<MonitorRun, 'get' | 'keptKeys' | 'trust'>, report: string[]) {
  const listed = await listedKeys(run.get);
  const keys = pins(run, listed, report);
  const pinned = verifiersOf(keys, 'a pinned key');
  const logId = pinned[0]?.name.slice(ORIGIN_PREFIX.length) ?? '';
  const { trusted, endorsed } = trustedKeys(pinned, listed, logId);
  for (const { key, by } of endorsed) report.push(`trusting key ${key.keyId}: endorsed by ${by.text}`, `  ${key.verifierKey}`);
  for (const key of listed) if (!trusted.some((v) => v.text === key.verifierKey)) report.push(untrusted(key));
  return { keys: [...keys, ...endorsed.map(({ key }) => key.verifierKey)], trusted, listed };
}

export async function monitor(run: MonitorRun): Promise<MonitorVerdict> {
  const report: string[] = [];
  const { keys, trusted: pinned, listed } = await trust(run, report);
  let checkpoint: SignedCheckpoint | string;
  if (run.kept === undefined) {
    checkpoint = await firstRun(run, pinned, report);
  } else {
    const kept = openCheckpoint(run.kept, pinned);
    if ('problem' in kept && !kept.unsigned) throw new KeptFileError(`the kept checkpoint: ${kept.problem}`);
    checkpoint = 'problem' in kept ? `the kept checkpoint: ${kept.problem}` : await laterRun(run, pinned, kept, report);
  }
  if (typeof checkpoint === 'string') return { ok: false, reason: checkpoint, report };
  const outside = signedOutsideKeyTime(checkpoint, pinned, listed);
  if (outside) return { ok: false, reason: `the newest checkpoint: ${outside}`, report };
  return { ok: true, checkpoint, keys: [...new Set(keys)], report };
}
