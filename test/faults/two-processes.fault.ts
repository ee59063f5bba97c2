// test-run: serial (a fault test: its kills and timings want the whole machine)
// Two service processes on one database file, both under write load on the same pets:
// SQLITE_BUSY is absorbed (busy_timeout, BEGIN IMMEDIATE), so no request fails; no
// acknowledged write is lost; versions stay 1..n per pet; and each process's GET sees
// the other's commits (PRAGMA data_version), during the load and right after a write.
// Run with `npm run test:crash`; FAULT_SEED repeats a run's choices.
import { Agent } from 'node:http';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { killAll, startService, type Service } from '../kit/service.ts';
import {
  assertNoSecrets,
  checkFile,
  checkLog,
  httpSend,
  patch,
  percentile,
  prng,
  readLog,
  replay,
  seedDatabase,
  seedFromEnv,
  tick,
  type Write,
} from './load.ts';

const PETS = 20;
const WRITERS_PER_PROCESS = 20;
const READERS_PER_PROCESS = 2;
const LOAD_MS = 4_000;

interface Read {
  via: string;
  sentAt: number;
  ackAt: number;
  status: number;
  /** petId -> quantity shown */
  shown?: Map<number, number>;
}

const two = suite<{ scratch: TempDir; dir: string }>(
  'two service processes on one database (SQLite only: checks the file, integrity_check)',
);
two.before((ctx) => {
  ctx.scratch = tempDir('inv-two-');
  ctx.dir = ctx.scratch.dir;
});
two.after(async (ctx) => {
  await killAll();
  ctx.scratch.cleanup();
});

two('concurrent writes through both: no 5xx, nothing lost, each sees the other', async ({ dir }) => {
  const started = Date.now();
  const seed = seedFromEnv();
  const random = prng(seed);
  const path = join(dir, 'inventory.db');
  const keys = (await seedDatabase(path, PETS, ['proc-a', 'proc-b'])) as [string, string];
  // Both at once, as two instances started together would.
  const [a, b] = await Promise.all([startService({ db: path, expectKey: false }), startService({ db: path, expectKey: false })]);
  const procs: { name: string; service: Service; key: string }[] = [
    { name: 'proc-a', service: a, key: keys[0] },
    { name: 'proc-b', service: b, key: keys[1] },
  ];

  // Every quantity is used once, so a quantity seen in a GET names the write that made it.
  let nextQuantity = 1;
  const writes: Write[] = [];
  const reads: Read[] = [];
  const deadline = Date.now() + LOAD_MS;
  const writer = async (p: (typeof procs)[number], l: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; Date.now() < deadline; i++) {
        const w: Write = {
          requestId: `${p.name}-l${l}-${i}`,
          pet: 1 + Math.floor(random() * PETS),
          quantity: nextQuantity++,
          via: p.name,
          sentAt: 0,
        };
        writes.push(w);
        await patch(agent, p.service.port, p.key, w);
        if (w.status === undefined) throw new Error(`${w.requestId} failed: ${w.error}`);
      }
    } finally {
      agent.destroy();
    }
  };
  const reader = async (p: (typeof procs)[number]) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      while (Date.now() < deadline) {
        const sentAt = tick();
        const res = await httpSend(agent, p.service.port, { path: '/v1/inventory', headers: { Authorization: `Bearer ${p.key}` } });
        const r: Read = { via: p.name, sentAt, ackAt: tick(), status: res.status };
        if (res.status === 200) {
          r.shown = new Map((JSON.parse(res.text) as { petId: number; quantity: number }[]).map((e) => [e.petId, e.quantity]));
        }
        reads.push(r);
      }
    } finally {
      agent.destroy();
    }
  };
  await Promise.all(
    procs.flatMap((p) => [
      ...Array.from({ length: WRITERS_PER_PROCESS }, (_, l) => writer(p, l)),
      ...Array.from({ length: READERS_PER_PROCESS }, () => reader(p)),
    ]),
  );

  const statuses = (list: { status?: number }[]) =>
    list.reduce<Record<string, number>>((acc, x) => ({ ...acc, [String(x.status)]: (acc[String(x.status)] ?? 0) + 1 }), {});
  const fiveHundreds = writes.filter((w) => w.status! >= 500);
  assert.equal(
    fiveHundreds.slice(0, 5).map((w) => `${w.via} ${w.requestId}: ${w.status} ${w.body}`),
    [],
    `${fiveHundreds.length} PATCHes got a 5xx (SQLITE_BUSY not absorbed?)`,
  );
  assert.equal(statuses(writes), { 200: writes.length }, 'every PATCH is a 200');
  assert.equal(statuses(reads), { 200: reads.length }, 'every GET is a 200');
  for (const p of procs) assert.ok(writes.filter((w) => w.via === p.name).length > 100, `${p.name} took too few writes`);

  // After the load: a write through one is seen at once by a GET through the other.
  // Ten writes through A, each followed by a GET through B, then the other way round:
  // the reader writes nothing meanwhile, so only data_version can tell it of the change.
  const agents = procs.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    let lastTag: unknown;
    for (let i = 0; i < 20; i++) {
      const [from, to] = i < 10 ? [0, 1] : [1, 0];
      const w: Write = { requestId: `visible-${i}`, pet: 1 + (i % PETS), quantity: nextQuantity++, via: procs[from]!.name, sentAt: 0 };
      writes.push(w);
      await patch(agents[from]!, procs[from]!.service.port, procs[from]!.key, w);
      assert.is(w.status, 200, w.body);
      const res = await httpSend(agents[to]!, procs[to]!.service.port, {
        path: '/v1/inventory',
        headers: { Authorization: `Bearer ${procs[to]!.key}` },
      });
      assert.is(res.status, 200);
      assert.is.not(res.headers.etag, lastTag, `${procs[to]!.name}'s list ETag changed after a write through ${procs[from]!.name}`);
      lastTag = res.headers.etag;
      const entry = (JSON.parse(res.text) as { petId: number; quantity: number }[]).find((e) => e.petId === w.pet);
      assert.is(entry?.quantity, w.quantity, `${procs[to]!.name} shows pet ${w.pet} as written through ${procs[from]!.name} just before`);
    }
  } finally {
    agents.forEach((agent) => agent.destroy());
  }

  const stops = await Promise.all(procs.map((p) => p.service.stop()));
  for (const [i, s] of stops.entries()) assert.is(s.code, 0, `${procs[i]!.name} stops cleanly`);

  const { events, inventory } = readLog(path);
  const actorOf = (w: Write) => w.via;
  const { problems, found } = checkLog(events, writes, { pets: PETS, actorOf });
  assert.equal(problems.slice(0, 20), [], `${problems.length} problems in the log`);
  assert.is(found, writes.length, 'every acknowledged write is in events');
  assert.is(events.length, PETS + writes.length, 'one event per write, nothing more');
  const replayed = replay(events);
  assert.equal(
    inventory,
    [...replayed].sort(([x], [y]) => x - y).map(([pet_id, s]) => ({ pet_id, quantity: s.quantity, status: s.status, version: s.version })),
    'the inventory table equals the replay of the log',
  );

  // GETs during the load: each shown quantity is a write that had been sent before the
  // GET's answer came (nothing invented), and none older than a write acknowledged, by
  // either process, before the GET was sent (no stale cache).
  const writeOf = new Map<number, Write>();
  for (const w of writes) writeOf.set(w.quantity, w);
  const versionOf = new Map(events.filter((e) => e.type === 'QuantitySet').map((e) => [e.quantity!, e.version]));
  const ackedByPet = new Map<number, Write[]>();
  for (const w of [...writes].sort((x, y) => x.ackAt! - y.ackAt!)) {
    const list = ackedByPet.get(w.pet) ?? [];
    list.push(w);
    ackedByPet.set(w.pet, list);
  }
  const staleness: string[] = [];
  let crossChecks = 0;
  for (const r of reads) {
    for (const [pet, quantity] of r.shown!) {
      const shownVersion = quantity === 0 ? 1 : versionOf.get(quantity);
      const source = writeOf.get(quantity);
      if (quantity !== 0 && (!source || shownVersion === undefined || source.pet !== pet || source.sentAt > r.ackAt)) {
        staleness.push(`a GET through ${r.via} showed pet ${pet} at quantity ${quantity}, which no write sent before it had set`);
        continue;
      }
      let newest: Write | undefined;
      for (const w of ackedByPet.get(pet) ?? []) {
        if (w.ackAt! >= r.sentAt) break;
        if (!newest || w.version! > newest.version!) newest = w;
      }
      if (newest && newest.via !== r.via) crossChecks++;
      if (newest && shownVersion! < newest.version!) {
        staleness.push(
          `a GET through ${r.via} showed pet ${pet} at version ${shownVersion}, but version ${newest.version} ` +
            `(through ${newest.via}) was acknowledged before it was sent`,
        );
      }
    }
  }
  assert.equal(staleness.slice(0, 10), [], `${staleness.length} stale or invented entries in GETs`);

  checkFile(path);

  assertNoSecrets(
    procs.flatMap((p) => [
      { name: `${p.name} stdout`, text: p.service.out() },
      { name: `${p.name} stderr`, text: p.service.err() },
    ]),
    keys,
  );
  for (const p of procs) {
    const lines = p.service
      .out()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; method?: string; status?: number; msg?: string });
    const warnings = lines.filter((l) => l.level >= 40);
    assert.equal(warnings.slice(0, 3), [], `${p.name} logged ${warnings.length} warnings or errors`);
    // Stopped cleanly, so the buffered request lines were flushed: one per PATCH.
    const patchLines = lines.filter((l) => l.method === 'PATCH' && l.status === 200).length;
    assert.is(patchLines, writes.filter((w) => w.via === p.name).length, `${p.name}: one request line per PATCH`);
  }

  const summary = procs.map((p) => {
    const mine = writes.filter((w) => w.via === p.name);
    const ms = mine.map((w) => w.ms!);
    return `${p.name} ${mine.length} writes (p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms), ${reads.filter((r) => r.via === p.name).length} GETs`;
  });
  console.log(
    `two processes: seed ${seed}; ${summary.join('; ')}; 5xx: ${fiveHundreds.length}; ` +
      `${crossChecks} GET entries checked against a newer write through the other process; ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
});

two.run();
