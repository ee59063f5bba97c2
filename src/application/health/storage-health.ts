// Whether the database can take writes. A storage fault on a write (a full disk, a
// read-only file, an I/O error) marks it unwritable; /readyz then probes, at most once
// a second, with a real write that needs new pages, and a successful probe or commit
// marks it writable again: the service recovers by itself once the fault is gone.
import { REQUEST_BUDGET_MS, byDeadline } from '../write/deadline.ts';
import {
  ChainHeadMismatch,
  chainHeadMismatchIn,
  StoreUnavailable,
  type ConnectionStatus,
  type StorageStatus,
  type StoreHealth,
} from '../../store/health.ts';

export interface StorageHealth {
  /** Call with any error of a write: storage faults mark the database unwritable. */
  failed(error: unknown): void;
  succeeded(): void;
  /** undefined when ready, else why not. */
  problem(): Promise<string | undefined>;
  /** The write-ahead log's state, or the connections' (PostgreSQL), for readiness to
   * show; undefined: nothing to show. */
  status(): StorageStatus | ConnectionStatus | undefined;
}

/** What to do about a storage fault (not mere contention), or else its code, or why the
 * store cannot write, else undefined. */
function storageFault(store: Pick<StoreHealth, 'fault'>, error: unknown): string | undefined {
  for (let e = error as { cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e instanceof StoreUnavailable) return e.message;
  }
  const fault = store.fault(error);
  return fault?.kind === 'storage' ? (fault.advice ?? fault.code) : undefined;
}

export function makeStorageHealth(
  store: Pick<StoreHealth, 'ping' | 'probeWrite' | 'unavailable' | 'fault'> & Pick<StoreHealth, 'diagnostics'>,
  deps: { now: () => number; probeEveryMs?: number; onMismatch?: (mismatch: ChainHeadMismatch) => void },
): StorageHealth {
  const probeEveryMs = deps.probeEveryMs ?? 1000;
  let fault: string | undefined;
  let lastProbe = -Infinity;
  const note = (error: unknown) => {
    const why = storageFault(store, error);
    // Told once a stretch, when it starts: not again for every write it refuses.
    const mismatch = chainHeadMismatchIn(error);
    if (mismatch && why !== fault) deps.onMismatch?.(mismatch);
    fault = why ?? fault;
  };
  return {
    failed: note,
    succeeded() {
      fault = undefined;
    },
    status() {
      const shown = store.diagnostics();
      return shown.store === 'sqlite' ? shown.wal : shown.connection;
    },
    async problem() {
      // A database that stops answering makes readiness answer "not ready" within the
      // request's budget, not when a driver gives up.
      const deadline = Date.now() + REQUEST_BUDGET_MS;
      try {
        await byDeadline(store.ping(), deadline);
      } catch (error) {
        return `the database does not answer (${storageFault(store, error) ?? 'error'})`;
      }
      // Known without a failed write: a writer that stopped makes every write fail.
      fault = store.unavailable() ?? fault;
      if (fault && deps.now() - lastProbe >= probeEveryMs) {
        lastProbe = deps.now();
        try {
          await byDeadline(store.probeWrite(), deadline);
          fault = undefined;
        } catch (error) {
          note(error);
        }
      }
      return fault && `the database cannot take writes (${fault})`;
    },
  };
}
