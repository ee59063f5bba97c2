// Many readers of one large list at once, right after a PATCH: the list is rendered once
// and its one buffer goes to every socket a slice per socket per turn of the event loop,
// so no turn hands the sockets more than a slice each and /healthz is answered meanwhile.
// Ended whole, the buffer went to all of them in one turn, the kernel copying megabytes
// per socket while every other request waited. The readers run in a process of their
// own: reading hundreds of large bodies keeps a process busy, and the probe must wait for
// the service, not for them.
import type { Socket } from 'node:net';
import * as assert from 'uvu/assert';
import { readersRound } from '../../scripts/bench/many-readers.ts';
import { DEFAULT_LIMITS } from '../../src/http/server/node-server.ts';
import { trackPets } from '../kit/fixtures.ts';
import type { TestApp } from '../kit/app.ts';
import { appSuite } from '../kit/suites.ts';

const PETS = 100_000;
const READERS = 300;
const MiB = 1024 * 1024;

const readers = appSuite('many readers of the list at once', {
  // The service's own limits: 300 answers of one 5 MB list hold it once, far under the
  // stall guard's cap, so none is closed however slowly the readers get to it. The
  // readers share one key, which may then have all 300 in flight.
  app: { limits: DEFAULT_LIMITS, maxRequestsPerKey: READERS + 10 },
  async given(t) {
    for (let from = 1; from <= PETS; from += 10_000) {
      await trackPets(
        t.store,
        Array.from({ length: 10_000 }, (_, i) => ({ petId: from + i, quantity: (from + i) % 100 })),
      );
    }
    // Rendered once before: what is measured is a render after a change and its fan-out,
    // not the first render's compiling.
    assert.is((await t.get()).status, 200);
  },
});

/** The most bytes the server handed its sockets in one turn of the event loop, until stop(). */
function bytesPerTurn(t: TestApp): { stop(): number } {
  const sockets = new Set<Socket>();
  t.server.on('connection', (s: Socket) => sockets.add(s));
  const total = () => {
    let n = 0;
    for (const s of sockets) n += s.bytesWritten;
    return n;
  };
  let last = total();
  let most = 0;
  let timer: NodeJS.Immediate;
  const turn = () => {
    const now = total();
    most = Math.max(most, now - last);
    last = now;
    timer = setImmediate(turn);
  };
  timer = setImmediate(turn);
  return {
    stop() {
      clearImmediate(timer);
      return most;
    },
  };
}

readers(
  `${READERS} clients read the ${PETS}-pet list together after a PATCH: a slice per socket per turn, /healthz answered`,
  async ({ t }) => {
    const turns = bytesPerTurn(t);
    const round = await readersRound(t.port, t.key, READERS, 42);
    const most = turns.stop();
    const slowest = Math.max(...round.healthzMs);
    console.log(
      `  ${READERS} readers in ${round.readersMs.toFixed(0)} ms; at most ${(most / MiB).toFixed(1)} MiB handed over in a turn; ` +
        `/healthz probed ${round.healthzMs.length} times, slowest ${slowest.toFixed(0)} ms`,
    );
    assert.is(round.failures, 0, 'every reader and every probe answered 200');
    const size = round.bytes[0]!;
    assert.ok(size > PETS * 30, `a whole list (${size} bytes)`);
    assert.ok(
      round.bytes.every((b) => b === size),
      'every reader got the same whole list',
    );
    // A slice per socket is 64 KiB: 300 of them are under 20 MiB. Whole lists would be 300
    // times the list's size, as much of it as the kernel takes at once.
    assert.ok(most < 2 * READERS * 64 * 1024, `${(most / MiB).toFixed(1)} MiB handed to the sockets in one turn`);
    // How long the probes took is printed, not asserted (scripts/bench/many-readers.ts
    // measures it): no document promises a latency under this load.
    assert.ok(round.healthzMs.length > 0, 'probed while the readers read');
  },
);

readers.run();
