// npm run bench:audit — the auditors' questions on a log of 1,000,000 events, on SQLite
// and on PostgreSQL. The log is built through the store's own batch path (appendBatch,
// as the service writes) with a simulated clock: a year of business hours (09:00 to
// 18:00 UTC on weekdays) with a week's outage in June and the clock set back once,
// 1,000 pets (some far busier than others), four clerks' keys (clerk-dev revoked on
// 1 September, three of its requests landing within a second of the revocation) and
// status changes by an operator. Then, warm, each query of the guide's block "The
// questions at scale" (docs/auditors.md, read from there so that the guide shows what
// is measured), a page of GET /v1/audit/stock-adjustments for each combination of
// filters (through the port the route reads), scripts/stock-at --pet's replay, the
// migration that fills stock_adjustments for an existing log, and verify-log's
// comparison of the table with the events. Prints each median beside its bound and the
// load average, and writes bench-results/audit.json.
//   --events N (1000000)  --store sqlite|postgres|both (both)  --runs N (5)
//   --keep DIR: the SQLite log is built in DIR and kept there; a log already there (of the
//   same size) is asked again without being built, which saves the build's minutes.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { stockAdjustmentPage } from '../../src/application/read/stock-history.ts';
import { replayPet } from '../../src/application/read/stock-replay.ts';
import type { DomainEvent } from '../../src/domain/events.ts';
import type { Submission } from '../../src/store/event-log.ts';
import { openStore } from '../../src/store/open.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { migratePostgres } from '../../src/store/postgres/schema.ts';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import { createDatabase, startPostgres } from '../embedded-postgres.ts';
import { scriptArgs } from '../script-args.ts';
import { loadAverage, median } from './harness.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const { values } = scriptArgs(import.meta.url, {
  events: { type: 'string', default: '1000000' },
  store: { type: 'string', default: 'both' },
  runs: { type: 'string', default: '5' },
  keep: { type: 'string' },
});
const EVENTS = Number(values.events);
const RUNS = Number(values.runs);
const PETS = 1000;
const CLERKS = ['clerk-anna', 'clerk-ben', 'clerk-chloe', 'clerk-dev'] as const;
const WEIGHTS = [0.4, 0.3, 0.2, 0.1];
const START = Date.parse('2026-01-05T09:00:00.000Z');
const OUTAGE = [Date.parse('2026-06-15T00:00:00.000Z'), Date.parse('2026-06-22T00:00:00.000Z')] as const;
const REVOKED_AT = Date.parse('2026-09-01T12:00:00.000Z');
const BUSINESS_SECONDS = 250 * 9 * 3600;
const BATCH = 1000;

/** A measured row, printed as soon as it is measured (a long run's figures are not lost). */
function report(rows: Row[], row: Row): void {
  rows.push(row);
  const bound = row.bound === Infinity ? '' : ` (bound ${row.bound} ms)`;
  const count = row.rows === undefined ? '' : `, ${row.rows} rows`;
  console.log(
    `${row.met ? 'ok  ' : 'MISS'} ${row.store.padEnd(8)} ${row.ms.toFixed(1).padStart(9)} ms  ${row.question}${count}${bound}  [load ${loadAverage()}]`,
  );
}

interface Row {
  question: string;
  store: string;
  ms: number;
  bound: number;
  met: boolean;
  rows?: number;
}

/** The guide's queries at scale, by question: the SQLite block, then PostgreSQL's forms. */
function guideQuestions(): { sqlite: Map<string, string>; postgres: Map<string, string> } {
  const page = readFileSync(join(ROOT, 'docs/auditors.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## The questions at scale\n'));
  const blocks = [...section.slice(0, section.indexOf('\n## ', 5)).matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  const parse = (block: string) =>
    new Map(
      block
        .split(/^-- question: /m)
        .slice(1)
        .map((part) => {
          const [name, ...sql] = part.split('\n');
          return [name!.replace(/ \(PostgreSQL\)$/, ''), sql.join('\n').trim().replace(/;$/, '')] as const;
        }),
    );
  const sqlite = parse(blocks[0]!);
  const postgres = new Map([...sqlite, ...parse(blocks[1]!)]);
  return { sqlite, postgres };
}

/** A deterministic generator, so that both stores get the same log. */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

/** The next business instant at or after t: weekdays 09:00 to 18:00 UTC, outside the outage. */
function business(t: number): number {
  for (;;) {
    const d = new Date(t);
    const day = d.getUTCDay();
    const hour = d.getUTCHours();
    const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    if (t >= OUTAGE[0] && t < OUTAGE[1]) t = OUTAGE[1];
    else if (day === 0 || day === 6 || hour >= 18) t = midnight + 86_400_000 + 9 * 3600_000;
    else if (hour < 9) t = midnight + 9 * 3600_000;
    else return t;
  }
}

/** The log, appended through the store's batch path; returns how long it took. */
async function buildLog(store: InventoryStore, clock: { now: number }): Promise<number> {
  const started = performance.now();
  const rand = random(42);
  const versions = new Map<bigint, number>();
  const quantities = new Map<bigint, number>();
  let pending: Submission[] = [];
  let made = 0;
  const flush = async () => {
    for (const outcome of await store.appendBatch(pending))
      if (!outcome.ok) throw 'error' in outcome ? (outcome.error as Error) : new Error(outcome.refused.reason);
    pending = [];
  };
  const append = (petId: bigint, event: DomainEvent, actor: string, at: number) => {
    const version = versions.get(petId) ?? 0;
    versions.set(petId, version + 1);
    pending.push({
      meta: { actor, requestId: `r${made}` },
      recordedAt: new Date(at).toISOString(),
      appends: [{ petId, expectedVersion: version, events: [event] }],
    });
    made++;
  };
  clock.now = START - 86_400_000;
  for (const name of CLERKS) await store.keys.create(name, 'cli:ops');
  for (let id = 1n; id <= PETS; id++) {
    quantities.set(id, 20);
    append(id, { type: 'PetTracked', data: { quantity: 20, status: 'available' } }, 'cli:ops', START - 3600_000);
  }
  const meanGapMs = (BUSINESS_SECONDS * 1000) / EVENTS;
  let t = START;
  let revoked = false;
  while (made < EVENTS) {
    t = business(t + Math.round(-Math.log(1 - rand()) * meanGapMs));
    // The clock set back 90 s once, half way through.
    if (made === Math.floor(EVENTS / 2)) t -= 90_000;
    if (!revoked && t >= REVOKED_AT) {
      await flush();
      clock.now = REVOKED_AT;
      await store.keys.revoke('clerk-dev', 'cli:ops');
      revoked = true;
      // Requests authenticated just before the revocation, committed just after it.
      for (let i = 1; i <= 3 && made < EVENTS; i++)
        append(BigInt(i), { type: 'QuantitySet', data: { quantity: i } }, 'clerk-dev', REVOKED_AT + i * 200);
      for (let i = 1n; i <= 3n; i++) quantities.set(i, Number(i));
      continue;
    }
    const petId = BigInt(Math.min(PETS, 1 + Math.floor(PETS * rand() ** 1.5)));
    if (rand() < 0.03) {
      append(petId, { type: 'StatusSet', data: { status: rand() < 0.5 ? 'pending' : 'available' } }, 'cli:ops', t);
    } else {
      const r = rand();
      let clerk = 0;
      for (let acc = WEIGHTS[0]!; r > acc && clerk < (revoked ? 2 : 3); acc += WEIGHTS[clerk + 1]!) clerk++;
      const before = quantities.get(petId)!;
      const roll = rand();
      const quantity =
        roll < 0.05 ? before : roll < 0.07 ? before + 50 + Math.floor(rand() * 150) : Math.max(0, before + Math.floor(rand() * 11) - 6);
      quantities.set(petId, quantity);
      append(petId, { type: 'QuantitySet', data: { quantity } }, CLERKS[clerk]!, t);
    }
    if (pending.length >= BATCH) await flush();
  }
  await flush();
  return performance.now() - started;
}

/** The median of RUNS timed runs after one untimed (warm). */
async function timed(run: () => Promise<number> | number): Promise<{ ms: number; rows: number }> {
  const rows = await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return { ms: median(times), rows };
}

const WHOLE_LOG = /whole log/;

/** The port's reads: API pages for each combination of filters, and stock-at --pet. */
async function portQuestions(store: InventoryStore, name: string, rows: Row[]): Promise<void> {
  const pages: [string, Parameters<typeof stockAdjustmentPage>[1]][] = [
    ['API page: pet', { pet: 1n, after: 0n, limit: 1000 }],
    ['API page: one day', { since: '2026-03-04T00:00:00.000Z', until: '2026-03-05T00:00:00.000Z', after: 0n, limit: 1000 }],
    ['API page: actor', { actor: 'clerk-ben', after: 0n, limit: 1000 }],
    [
      'API page: actor and month',
      { actor: 'clerk-ben', since: '2026-03-01T00:00:00.000Z', until: '2026-04-01T00:00:00.000Z', after: 0n, limit: 1000 },
    ],
    ['API page: pet and month', { pet: 1n, since: '2026-03-01T00:00:00.000Z', until: '2026-04-01T00:00:00.000Z', after: 0n, limit: 1000 }],
    ['API page: one day near the end', { since: '2026-12-02T00:00:00.000Z', until: '2026-12-03T00:00:00.000Z', after: 0n, limit: 1000 }],
    ['API page: since (the whole year after it)', { since: '2026-01-06T00:00:00.000Z', after: 0n, limit: 1000 }],
    ['API page: since (the last month)', { since: '2026-12-01T00:00:00.000Z', after: 0n, limit: 1000 }],
    ['API page: until (the first week)', { until: '2026-01-12T00:00:00.000Z', after: 0n, limit: 1000 }],
    [
      'API page: pet, actor and day',
      { pet: 1n, actor: 'clerk-anna', since: '2026-03-04T00:00:00.000Z', until: '2026-03-05T00:00:00.000Z', after: 0n, limit: 1000 },
    ],
    ['API page: no filter, from the middle', { after: BigInt(Math.floor(EVENTS / 2)), limit: 1000 }],
  ];
  for (const [question, query] of pages) {
    const r = await timed(async () => (await stockAdjustmentPage(store, query)).rows.length);
    report(rows, { question, store: name, ms: r.ms, rows: r.rows, bound: 100, met: r.ms <= 100 });
  }
  const stockAt = await timed(async () => (await replayPet(store, 1n, '2026-07-01T00:00:00.000Z')).stock.size);
  report(rows, {
    question: 'scripts/stock-at --pet 1 (its replay)',
    store: name,
    ms: stockAt.ms,
    rows: stockAt.rows,
    bound: 100,
    met: stockAt.ms <= 100,
  });
}

/** verify-log's comparison of the table with the events: whole log, timed once. */
async function verifyCheck(store: InventoryStore, name: string, rows: Row[]): Promise<void> {
  const started = performance.now();
  const mismatch = await store.adjustmentMismatch();
  if (mismatch) throw new Error(`stock_adjustments differs from the events in ${mismatch.count} rows`);
  report(rows, {
    question: "verify-log's comparison of stock_adjustments with the events",
    store: name,
    ms: performance.now() - started,
    bound: Infinity,
    met: true,
  });
}

function record(rows: Row[], question: string, name: string, ms: number, count: number): void {
  const bound = WHOLE_LOG.test(question) ? 1000 : 100;
  report(rows, { question, store: name, ms, rows: count, bound, met: ms <= bound });
}

async function onSqlite(dir: string, sql: Map<string, string>, rows: Row[]): Promise<void> {
  const path = join(values.keep ?? dir, `audit-${EVENTS}.db`);
  const reused = existsSync(path);
  const clock = { now: START };
  const store = await openStore(path, { now: () => clock.now });
  try {
    if (reused) console.log(`sqlite: the log of ${EVENTS} events kept in ${path} is asked again`);
    else {
      const built = await buildLog(store, clock);
      console.log(`sqlite: ${EVENTS} events built in ${(built / 1000).toFixed(1)} s (load ${loadAverage()})`);
    }
    const db = new Database(path, { readonly: true });
    db.defaultSafeIntegers(true);
    try {
      for (const [question, text] of sql) {
        const statement = db.prepare(text);
        const r = await timed(() => statement.all().length);
        record(rows, question, 'sqlite', r.ms, r.rows);
      }
    } finally {
      db.close();
    }
    await portQuestions(store, 'sqlite', rows);
    await verifyCheck(store, 'sqlite', rows);
  } finally {
    await store.close();
  }
  // The migration that fills the table, on a copy whose table is the view again.
  const copy = join(dir, 'migrate.db');
  copyFileSync(path, copy);
  const raw = new Database(copy);
  const view = readFileSync(join(ROOT, 'migrations/sqlite/004-stock-adjustments.sql'), 'utf8');
  raw.exec(`DROP TABLE stock_adjustments; ${view}; DELETE FROM schema_migrations WHERE version = 14`);
  const started = performance.now();
  migrate(raw, loadMigrations(), copy);
  const ms = performance.now() - started;
  raw.close();
  report(rows, { question: 'the migration that fills stock_adjustments', store: 'sqlite', ms, bound: Infinity, met: true });
}

async function onPostgres(sql: Map<string, string>, rows: Row[]): Promise<void> {
  const server = await startPostgres('bench:audit');
  try {
    const url = await createDatabase(server.url, 'audit_bench');
    const clock = { now: START };
    const store = await openStore(url, { now: () => clock.now, listen: false });
    const client = new pg.Client({ connectionString: url });
    try {
      const built = await buildLog(store, clock);
      console.log(`postgres: ${EVENTS} events built in ${(built / 1000).toFixed(1)} s (load ${loadAverage()})`);
      await client.connect();
      await client.query('VACUUM ANALYZE');
      for (const [question, text] of sql) {
        const r = await timed(async () => (await client.query(text)).rowCount ?? 0);
        record(rows, question, 'postgres', r.ms, r.rows);
      }
      await portQuestions(store, 'postgres', rows);
      await verifyCheck(store, 'postgres', rows);
      // The migration that fills the table, on the log with the table the view again.
      const view = /CREATE VIEW stock_adjustments AS[\s\S]*?WHERE type = 'QuantitySet';/.exec(
        readFileSync(join(ROOT, 'migrations/postgres/001-schema.sql'), 'utf8'),
      )![0];
      await client.query(
        `BEGIN; DROP TABLE stock_adjustments; DROP FUNCTION stock_adjustments_append_only(); ${view} DELETE FROM schema_migrations WHERE version = 9; COMMIT`,
      );
    } finally {
      await client.end();
      await store.close();
    }
    const pool = new pg.Pool({ connectionString: url });
    try {
      const started = performance.now();
      await migratePostgres(pool, 'audit_bench');
      report(rows, {
        question: 'the migration that fills stock_adjustments',
        store: 'postgres',
        ms: performance.now() - started,
        bound: Infinity,
        met: true,
      });
    } finally {
      await pool.end();
    }
  } finally {
    await server.stop();
  }
}

const questions = guideQuestions();
const dir = mkdtempSync(join(tmpdir(), 'bench-audit-'));
if (values.keep !== undefined) mkdirSync(values.keep, { recursive: true });
const rows: Row[] = [];
try {
  if (values.store !== 'postgres') await onSqlite(dir, questions.sqlite, rows);
  if (values.store !== 'sqlite') await onPostgres(questions.postgres, rows);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const load = loadAverage();
console.log(`\n${EVENTS} events; load average ${load} (a shared machine: 2 cores, other work running)`);
console.log(`${rows.filter((r) => !r.met).length} of ${rows.length} rows missed their bound`);
mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
writeFileSync(join(ROOT, 'bench-results/audit.json'), `${JSON.stringify({ events: EVENTS, load, rows }, null, 2)}\n`);
process.exitCode = rows.every((r) => r.met) ? 0 : 1;
