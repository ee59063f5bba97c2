// The Merkle tree's nodes are read on PostgreSQL by their keys: the frontier each batch
// reads under the chain head's lock, and the nodes of a proof. Neither may read the whole
// tree, whatever the planner knows of the table: on a log whose tree_nodes had no
// statistics yet (a young database, autovacuum not yet round), the frontier was planned
// as a hash join over every node, 9 ms at 30,000 events under the lock and growing with
// the log. Here the table's statistics are kept from being gathered, as on such a log.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { openStore } from '../../src/store/open.ts';
import type { InventoryStore } from '../../src/store/port.ts';
import { FRONTIER } from '../../src/store/postgres/write/batch-start.ts';
import { TREE_NODES } from '../../src/store/postgres/verifiable-log-reads.ts';
import { trackPets } from '../kit/fixtures.ts';
import { freshPostgresDatabase, runSql, type TestDatabase } from '../kit/postgres-server.ts';

/** Events in the log: 40,000 tree nodes, enough for a scan of them to look cheap to a
 * planner that has no statistics. */
const EVENTS = 20_000;

interface Context {
  db: TestDatabase;
  store: InventoryStore;
  client: pg.Client;
}

const reads = suite<Context>('PostgreSQL reads the Merkle tree by key', {} as Context);
reads.before(async (ctx) => {
  ctx.db = await freshPostgresDatabase();
  ctx.store = await openStore(ctx.db.url);
  await runSql(ctx.db.url, 'ALTER TABLE tree_nodes SET (autovacuum_enabled = false)');
  await trackPets(
    ctx.store,
    Array.from({ length: EVENTS }, (_, i) => ({ petId: i + 1, quantity: i % 100 })),
  );
  ctx.client = new pg.Client({ connectionString: ctx.db.url });
  await ctx.client.connect();
});
reads.after(async (ctx) => {
  await ctx.client.end();
  await ctx.store.close();
  await ctx.db.cleanup();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every scan of tree_nodes in the plan of sql, by its node type. */
async function treeScans(client: pg.Client, sql: string, values: unknown[] = []): Promise<string[]> {
  const { rows } = await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${sql}`, values);
  const scans: string[] = [];
  const walk = (node: PlanNode) => {
    if (node['Relation Name'] === 'tree_nodes') scans.push(node['Node Type']);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(rows[0]!['QUERY PLAN'][0]!.Plan);
  return scans;
}

reads('the statistics of tree_nodes are not gathered (the case under test)', async ({ client }) => {
  const { rows } = await client.query<{ n: string }>(
    "SELECT count(*)::text AS n FROM pg_stats WHERE schemaname = 'public' AND tablename = 'tree_nodes'",
  );
  assert.is(rows[0]!.n, '0');
});

reads("a batch's frontier: one lookup by key per node, the nodes of the head's size", async ({ client }) => {
  const scans = await treeScans(client, FRONTIER);
  assert.ok(scans.length > 0, 'the plan reads tree_nodes');
  for (const scan of scans) assert.ok(/^Index( Only)? Scan$/.test(scan), `tree_nodes read by ${scans.join(', ')}`);
  const { rows } = await client.query<{ level: number; idx: string }>(FRONTIER);
  // One node per set bit of the size: 20,000 = 0b100111000100000, six of them.
  const expected = [...EVENTS.toString(2)].reverse().flatMap((bit, level) => (bit === '1' ? [[level, String((EVENTS >> level) - 1)]] : []));
  assert.equal(
    rows.map((r) => [r.level, r.idx]).sort((a, b) => Number(a[0]) - Number(b[0])),
    expected,
  );
});

reads("a proof's nodes: one lookup by key each, and a node that is not there is not made up", async ({ client }) => {
  const levels = [0, 0, 1, 5, 14, 20];
  const indexes = ['0', String(EVENTS - 1), '77', '3', '0', '0'];
  const scans = await treeScans(client, TREE_NODES, [levels, indexes]);
  assert.ok(scans.length > 0, 'the plan reads tree_nodes');
  for (const scan of scans) assert.ok(/^Index( Only)? Scan$/.test(scan), `tree_nodes read by ${scans.join(', ')}`);
  const { rows } = await client.query<{ level: number; idx: string; hash: Buffer }>(TREE_NODES, [levels, indexes]);
  // Level 20 holds no node at 20,000 events.
  assert.equal(rows.map((r) => `${r.level}/${r.idx}`).sort(), ['0/0', `0/${EVENTS - 1}`, '1/77', '14/0', '5/3']);
  for (const row of rows) assert.is(row.hash.length, 32);
});

reads.run();
