// The entries a batch is decided against: those this process's own commits left, while
// no other writer can have changed them, and the others read from the store.
import type { Entry } from '../../domain/apply-event.ts';
import type { Projection } from '../../store/projection.ts';
import type { Job } from './command-job.ts';

/** The most entries kept in memory; past it they are forgotten and read again. */
const KNOWN_ENTRIES = 10_000;

/** The entries of a batch's pets, and whether some of them came from memory. */
export interface EntriesRead {
  current: Map<bigint, Entry | undefined>;
  known: boolean;
}

export type KnownEntries = ReturnType<typeof knownEntries>;

/**
 * The entries this process's commits left, valid while the store's change token has not
 * moved since the last of them: then no other writer (another process, an operator
 * command, a rebuild) came in between, and the store's read would give the same. A
 * writer that slips in between a commit and the token read after it leaves an entry
 * that is stale, which decides an append the store refuses (its expected version), never
 * a wrong answer: refusals are decided again on a fresh read.
 */
export function knownEntries(store: Pick<Projection, 'loadEntries'> & Partial<Pick<Projection, 'changeTokenNow'>>) {
  const known = new Map<bigint, Entry>();
  let token: string | undefined;
  const forget = () => {
    known.clear();
    token = undefined;
  };
  return {
    valid(): boolean {
      if (token === undefined) return false;
      if (store.changeTokenNow?.() === token) return true;
      forget();
      return false;
    },
    /** The entries of the jobs' pets: those known (when useKnown), the others read by `readBy`. */
    async read(jobs: Job[], useKnown: boolean, readBy: number): Promise<EntriesRead> {
      const current = new Map<bigint, Entry | undefined>();
      const missing: bigint[] = [];
      for (const job of jobs) {
        for (const { petId } of job.commands) {
          if (current.has(petId)) continue;
          const entry = useKnown ? known.get(petId) : undefined;
          current.set(petId, entry);
          if (entry === undefined) missing.push(petId);
        }
      }
      if (missing.length > 0)
        for (const [petId, entry] of await store.loadEntries(missing, { waitUntil: readBy })) current.set(petId, entry);
      return { current, known: useKnown && missing.length < current.size };
    },
    remember(entry: Entry) {
      if (known.size >= KNOWN_ENTRIES) known.clear();
      known.set(entry.petId, entry);
    },
    /** After a batch; failed: some submission failed (its pets are read again). */
    committed(failed: boolean) {
      if (failed || !store.changeTokenNow) return forget();
      // The batch committed: a store that cannot tell now must not fail its answers.
      try {
        token = store.changeTokenNow();
      } catch {
        forget();
      }
    },
  };
}
