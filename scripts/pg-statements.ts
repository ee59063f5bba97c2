// What a PATCH costs the PostgreSQL server, statement by statement: the service (1,000
// pets, a signing key) on an embedded server of its own with pg_stat_statements loaded,
// under PATCH load at 50 connections for SECONDS after a warm-up; then the server
// processes' CPU per PATCH (from /proc), the PATCHes per batch, and each statement's
// calls, planning and execution time, rows, buffers and WAL bytes, per PATCH. Then the
// batch's write statement under EXPLAIN (ANALYZE, BUFFERS) (auto_explain) for batches of
// 1, 16 and 128 QuantitySets written through the store's own batch path.
//   node --import tsx scripts/pg-statements.ts [SECONDS]      (about a minute with 10 s)
// Linux only (the CPU is read from /proc).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { commandsFor } from '../src/application/write/commands.ts';
import { openStore } from '../src/store/open.ts';
import { createDatabase, startPostgres } from './embedded-postgres.ts';
import { serviceOnNewDatabase } from './bench/fixtures.ts';
import { children, load, loadAverage, stop, WARMUP_SECONDS } from './bench/harness.ts';
import { serverCpuNow, serverCpuSince } from './bench/server-cpu.ts';
import { scriptArgs } from './script-args.ts';

const PETS = 1000;
const BATCH_SIZES = [1, 16, 128];
const { positionals } = scriptArgs(import.meta.url, {}, 1);
const SECONDS = Number(positionals[0] ?? 10);

interface StatementRow {
  query: string;
  calls: string;
  plan_ms: number;
  exec_ms: number;
  rows: string;
  blks_hit: string;
  blks_read: string;
  blks_dirtied: string;
  wal_bytes: string;
}

const STATEMENTS = `SELECT query, calls, total_plan_time AS plan_ms, total_exec_time AS exec_ms, rows,
  shared_blks_hit AS blks_hit, shared_blks_read AS blks_read, shared_blks_dirtied AS blks_dirtied, wal_bytes
  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  ORDER BY total_plan_time + total_exec_time DESC`;

/** The statement's text on one line, its first width characters. */
const short = (query: string, width = 96) => query.replace(/\s+/g, ' ').trim().slice(0, width);

function printStatements(rows: StatementRow[], patches: number): void {
  const per = (n: number | string) => (Number(n) / patches).toFixed(2);
  console.log(
    '\n| statement | calls per PATCH | planning µs per PATCH | execution µs per PATCH | rows per call | buffers hit / read / dirtied per PATCH | WAL bytes per PATCH |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    if (Number(r.calls) < patches / 1000) continue;
    console.log(
      `| \`${short(r.query)}\` | ${per(r.calls)} | ${((r.plan_ms * 1000) / patches).toFixed(1)} | ${((r.exec_ms * 1000) / patches).toFixed(1)} | ` +
        `${(Number(r.rows) / Number(r.calls)).toFixed(1)} | ${per(r.blks_hit)} / ${per(r.blks_read)} / ${per(r.blks_dirtied)} | ${per(r.wal_bytes)} |`,
    );
  }
  const total = rows.reduce((sum, r) => sum + r.plan_ms + r.exec_ms, 0);
  console.log(
    `\nall statements: ${((total * 1000) / patches).toFixed(1)} µs per PATCH (planning and execution, wall time inside the server)`,
  );
}

/** The service under PATCH load; the statements' cost per PATCH. */
async function underLoad(url: string, dir: string): Promise<void> {
  const {
    key,
    port,
    child: service,
  } = await serviceOnNewDatabase(url, PETS, false, {
    INVENTORY_SIGNING_KEY: join(dir, 'signing-key.pem'),
    LOG_LEVEL: 'warn',
  });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await load(port, 'patch', WARMUP_SECONDS, 50, key, PETS);
    await client.query('SELECT pg_stat_statements_reset()');
    const before = await serverCpuNow(url);
    const result = await load(port, 'patch', SECONDS, 50, key, PETS);
    const after = await serverCpuNow(url);
    const patches = result['2xx'];
    const { rows } = await client.query<StatementRow>(STATEMENTS);
    const writes = rows.find((r) => r.query.includes('WITH new_events AS'));
    console.log(
      `PATCH load, 50 connections, ${SECONDS} s: ${result.requests.average.toFixed(0)} PATCH/s, ${patches} answered 2xx, ` +
        `${result.non2xx + result.errors} not; server processes' CPU ${(serverCpuSince(before, after) / patches).toFixed(1)} µs per PATCH; ` +
        `${writes ? (patches / Number(writes.calls)).toFixed(1) : 'n/a'} PATCHes per batch`,
    );
    printStatements(rows, patches);
  } finally {
    await client.end();
    await stop(service);
  }
}

/** The write statement's plans, as auto_explain logs them, for batches of each size. */
async function explainBatches(url: string, plans: string[]): Promise<void> {
  const store = await openStore(url);
  try {
    const commands = commandsFor(store);
    for (const size of BATCH_SIZES) {
      // The first batch of each size warms the statement; the second is shown.
      for (const round of [0, 1]) {
        const batch = Array.from({ length: size }, (_, i) => ({
          type: 'SetQuantity' as const,
          petId: BigInt(1 + ((i * 7 + round) % PETS)),
          quantity: 1000 + round,
        }));
        plans.length = 0;
        await commands.handleAll(batch, { actor: 'cli:pg-statements', requestId: `explain-${size}-${round}` });
      }
      const plan = plans.find((p) => p.includes('new_events'));
      console.log(
        `\n### a batch of ${size}\n\n${plan ? plan.slice(plan.indexOf('Query Text')) : '(auto_explain logged no plan of the write)'}`,
      );
    }
  } finally {
    await store.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'pg-statements-'));
const plans: string[] = [];
let explaining = false;
const postgres = await startPostgres('pg-statements', {
  flags: ['-c', 'shared_preload_libraries=pg_stat_statements,auto_explain', '-c', 'pg_stat_statements.track_planning=on'],
  onLog: (line) => {
    if (explaining) plans.push(line);
  },
});
try {
  console.log(`load average before: ${loadAverage()}`);
  const url = await createDatabase(postgres.url, 'statements');
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query('CREATE EXTENSION pg_stat_statements');
  await underLoad(url, dir);
  // auto_explain for the sessions the store opens from now on.
  for (const setting of [
    'log_min_duration = 0',
    'log_analyze = on',
    'log_buffers = on',
    'log_nested_statements = on',
    'log_parameter_max_length = 0',
  ]) {
    await admin.query(`ALTER DATABASE statements SET auto_explain.${setting}`);
  }
  await admin.end();
  explaining = true;
  await explainBatches(url, plans);
  console.log(`\nload average after: ${loadAverage()}`);
} finally {
  // A service that failed to start is stopped too.
  for (const child of children) child.kill('SIGKILL');
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
}
