// Keeps the service's writer thread: when it stops on its own (a crash, running out of
// memory), every write fails at once with StoreUnavailable (503) instead of waiting, the
// store says why (readiness answers 503 with it), and the next write probe starts a new
// thread, by the same open rules as the first (never creating a database that vanished).
// Until a new thread opened, the reason and the failed restart's cause are kept.
import { StoreUnavailable } from '../../health.ts';
import type { ThreadWriter } from './worker-client.ts';
import { forwardOperations, invoke, type AsyncWriter } from './writer.ts';

type SupervisedWriter = AsyncWriter & {
  close(): Promise<void>;
  unavailable(): string | undefined;
  walBlockedSince(): number | undefined;
  rescue(): number;
};

export function superviseWriter(first: ThreadWriter, restart: () => Promise<ThreadWriter>): SupervisedWriter {
  let current = first;
  let restartFailed: StoreUnavailable | undefined;
  let restarting: Promise<void> | undefined;
  let closed = false;

  const down = (): StoreUnavailable | undefined => (current.stopped() ? (restartFailed ?? current.stopped()) : undefined);

  const startAgain = () =>
    (restarting ??= restart()
      .then(
        (fresh) => {
          if (closed) return fresh.close();
          current = fresh;
          restartFailed = undefined;
        },
        (error: unknown) => {
          restartFailed = new StoreUnavailable(
            `${current.stopped()!.message}; starting it again failed: ${(error as Error)?.message ?? String(error)}`,
            {
              cause: error,
            },
          );
        },
      )
      .finally(() => (restarting = undefined)));

  /** The current thread, or a rejection with why there is none running. */
  const live = (): Promise<ThreadWriter> => {
    const reason = down();
    return reason ? Promise.reject(reason) : Promise.resolve(current);
  };

  return {
    ...forwardOperations<AsyncWriter>(async (op, args) => invoke(await live(), op, args)),
    async probeWrite() {
      if (current.stopped()) {
        await startAgain();
        const reason = down();
        if (reason) throw reason;
      }
      await current.probeWrite();
    },
    unavailable: () => down()?.message,
    walBlockedSince: () => current.walBlockedSince(),
    rescue: () => current.rescue(),
    async close() {
      closed = true;
      await restarting;
      await current.close();
    },
  };
}
