// The store opener of the crash tests' service: the real one, with an appendBatch after
// whose commit, when it stored an Idempotency-Key's answer, the process stops itself
// (SIGSTOP: every thread, at once) before any of the batch's requests is answered. A test
// then sees the commit in the database and kills the process exactly between the commit
// and the answer.
import type { InventoryStore } from '../../../src/store/port.ts';
import { openStore as openRealStore, type StoreOpenOptions } from '../../../src/store/open.ts';

export * from '../../../src/store/open.ts';

export async function openStore(target: string, options?: StoreOpenOptions): Promise<InventoryStore> {
  const inner = await openRealStore(target, options);
  process.stderr.write('this service stops after its first commit of a stored answer (the crash tests)\n');
  return {
    ...inner,
    appendBatch: async (submissions, batchOptions) => {
      const outcomes = await inner.appendBatch(submissions, batchOptions);
      if (submissions.some((s) => s.idempotency) && outcomes.some((o) => o.ok)) process.kill(process.pid, 'SIGSTOP');
      return outcomes;
    },
  };
}
