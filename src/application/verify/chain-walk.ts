// The checks every hash chain of the log shares, the events' and the key log's: each row
// links to the one before it, hashes as its fields give, follows it without a gap, and
// keeps the hash a digest saved earlier names; the log ends at its sequence counter and
// no earlier than the newest digest.
import { GENESIS_HASH, type Digest } from '../../store/hash-chain.ts';

/** Where a chain broke (the first broken row's seq) and why. */
export interface ChainBreak {
  seq: number;
  reason: string;
}

/** A chain's digests by seq; fails on one that no log can extend. */
export function digestsOf(digests: readonly Digest[], chain: 'keys' | undefined): Map<number, string> | string {
  const wanted = new Map<number, string>();
  for (const d of digests.filter((d) => d.chain === chain)) {
    if (d.seq === 0 && d.hash !== GENESIS_HASH) return `seq 0 always has the hash ${GENESIS_HASH}`;
    if (wanted.has(d.seq) && wanted.get(d.seq) !== d.hash) return `two digests name seq ${d.seq} with different hashes`;
    wanted.set(d.seq, d.hash);
  }
  return wanted;
}

/** Why a row whose seq is not the next one breaks the chain: a digest's row or others lost. */
function gapProblem(what: string, wanted: Map<number, string>, head: Digest, at: number): ChainBreak {
  const lost = [...wanted.keys()].find((seq) => seq > head.seq && seq < at);
  if (lost !== undefined) return { seq: lost, reason: `the digest's ${what} is missing (seq ${head.seq} is followed by ${at})` };
  const missing = at === head.seq + 2 ? `seq ${head.seq + 1} is` : `seqs ${head.seq + 1} to ${at - 1} are`;
  return { seq: at, reason: `${missing} missing (${what}s are numbered without gaps): ${what}s were removed` };
}

/** Walks one chain's links, row by row; `what` names its rows in the reasons. */
export function chainWalk(what: string, wanted: Map<number, string>) {
  let head: Digest = { seq: 0, hash: GENESIS_HASH };
  return {
    get head() {
      return head;
    },
    /** Undefined when the row is a good next link; else why not. */
    step(at: number, prevHash: string | null, hash: string | null, expected: string): ChainBreak | undefined {
      if (prevHash !== head.hash) {
        return {
          seq: at,
          reason: `prev_hash does not link to the ${what} before it (seq ${head.seq}): ${what === 'event' ? 'an' : 'a'} ${what} was removed, reordered or changed`,
        };
      }
      if (hash !== expected) return { seq: at, reason: `the hash does not match the row: a field of this ${what} was changed` };
      if (at !== head.seq + 1) return gapProblem(what, wanted, head, at);
      const kept = wanted.get(at);
      if (kept !== undefined && kept !== hash) {
        return { seq: at, reason: `the ${what} has hash ${hash}, not the digest's: history up to it was rewritten` };
      }
      head = { seq: at, hash: hash };
      return undefined;
    },
    /** After the last row: the counter and the digests beyond the head. */
    end(counter: number): ChainBreak | undefined {
      if (counter > head.seq) {
        return {
          seq: counter,
          reason: `the sequence counter is at ${counter} but the log ends at seq ${head.seq}: the newest ${what}s were cut off`,
        };
      }
      const beyond = Math.max(0, ...wanted.keys());
      if (beyond > head.seq) return { seq: beyond, reason: `the log ends at seq ${head.seq}, before the digest's: it was truncated` };
      return undefined;
    },
  };
}
