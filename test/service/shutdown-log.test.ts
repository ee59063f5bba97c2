// The log a graceful shutdown leaves behind: every line, whole and in order, even when
// standard output fell behind and a write of the log was still under way at the signal.
// The service's log writes go out asynchronously; the process must not exit before
// they end (an exit cuts a write under way short, and the lines flushed at exit would
// pass it). Logging is the same on every store: SQLite alone.
import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { killAll, startService, WAIT_MS, withTimeout } from '../kit/service.ts';

const shutdownLog = suite<{ tmp: TempDir }>('the log at shutdown');

shutdownLog.before.each((ctx) => {
  ctx.tmp = tempDir('shutdown-log-');
});
shutdownLog.after.each(async (ctx) => {
  await killAll();
  ctx.tmp.cleanup();
});

/** Resolves once the port refuses connections: the service stopped listening. */
async function refused(port: number): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.once('error', resolve);
    });
    if (error?.code === 'ECONNREFUSED') return;
    if (Date.now() > deadline) throw new Error(`port ${port} still takes connections`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

shutdownLog('standard output read late: every access line once, whole, before "stopped"; exit 0', async ({ tmp }) => {
  const service = await startService({ db: tmp.path('inventory.db'), expectKey: true });
  // Nothing reads the service's standard output for now: its pipe fills, and a write of
  // the log waits in the kernel while more lines wait behind it.
  service.proc.stdout!.pause();
  const REQUESTS = 3000;
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      const id = `late-reader-${next++}`;
      const res = await fetch(`http://127.0.0.1:${service.port}/v1/inventory`, {
        headers: { authorization: `Bearer ${service.bootstrapKey!}`, 'x-request-id': id },
      });
      assert.is(res.status, 200);
      await res.arrayBuffer();
    }
  };
  // Only a guard against a hang: on a machine kept busy by other work 3,000 GETs can take
  // longer than the usual wait.
  await withTimeout(Promise.all(Array.from({ length: 8 }, worker)), 4 * WAIT_MS, `${REQUESTS} GETs`);

  service.kill('SIGTERM');
  await refused(service.port);
  // The service is shutting down and its log cannot be written. Given a moment, a
  // service that does not wait for its log reaches its exit with a write under way;
  // one that waits is still waiting when the reader comes back (its grace period is
  // 10 s), whatever this moment's length.
  await new Promise((r) => setTimeout(r, 300));
  service.proc.stdout!.resume();
  const { code } = await withTimeout(service.exited, WAIT_MS, 'the exit after SIGTERM');
  assert.is(code, 0, `exit 0\nstderr: ${service.err()}`);

  const lines = service.out().trimEnd().split('\n');
  const entries = lines.map((line, i) => {
    let entry: { msg?: string; requestId?: string; path?: string } | undefined;
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      // Reported below, with the line: a line cut short or mixed with another.
    }
    assert.ok(entry, `line ${i + 1} of ${lines.length} is whole JSON: ${line.slice(0, 200)}`);
    return entry;
  });
  const access = entries.flatMap((e, at) =>
    e.requestId?.startsWith('late-reader-') && e.path === '/v1/inventory' ? [{ id: e.requestId, at }] : [],
  );
  assert.is(access.length, REQUESTS, 'one access line per request');
  assert.is(new Set(access.map((a) => a.id)).size, REQUESTS, 'no request logged twice, none missing');
  const shuttingDown = entries.findIndex((e) => e.msg === 'shutting down');
  assert.ok(shuttingDown > access.at(-1)!.at, 'the lines of the requests answered before the signal come before "shutting down"');
  assert.is(entries.at(-1)!.msg, 'stopped', 'the last line is "stopped"');
});

shutdownLog.run();
