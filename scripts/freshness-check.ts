// Cross-instance freshness on PostgreSQL, measured: an app (the service's HTTP app, its
// GET list held in memory) and a second store on the same database, as a second
// instance or an operator command is. Each round the second store commits a write;
// from the moment that commit returns, the app is asked GET with the tag it last
// answered until the answer changes. Prints how many first reads were still stale and
// the time until the change showed (p50, p99, max, in ms). docs/scaling.md quotes it;
// test/http/http-inventory.test.ts holds the bound.
//   node --import tsx scripts/freshness-check.ts [ROUNDS]     (default 300, about 10 s)
// Uses TEST_POSTGRES_URL when set, else starts an embedded server.
import { commandsOn } from '../test/kit/fixtures.ts';

const rounds = Number(process.argv[2] ?? 300);
if (!Number.isInteger(rounds) || rounds < 1 || process.argv.length > 3) {
  process.stderr.write('usage: node --import tsx scripts/freshness-check.ts [ROUNDS]\n');
  process.exit(2);
}
const server = process.env.TEST_POSTGRES_URL ? undefined : await (await import('./embedded-postgres.ts')).startPostgres('freshness-check');
if (server) process.env.TEST_POSTGRES_URL = server.url;
const { startApp } = await import('../test/kit/app.ts');
const { postgresTarget } = await import('../test/kit/postgres-target.ts');

const target = postgresTarget();
const t = await startApp({ target });
const other = await target.open(t.db);
const commands = commandsOn(other, Date.now);
const waits: number[] = [];
let staleFirst = 0;
try {
  await t.track(1, 1);
  let tag = String((await t.get()).headers.etag);
  for (let i = 0; i < rounds; i++) {
    await commands.handle({ type: 'SetQuantity', petId: 1n, quantity: i }, { actor: 'cli:check', requestId: `r${i}` });
    const committed = performance.now();
    for (let read = 0; ; read++) {
      const res = await t.get('/v1/inventory', { 'If-None-Match': tag });
      if (res.status === 200) {
        waits.push(performance.now() - committed);
        tag = String(res.headers.etag);
        break;
      }
      if (read === 0) staleFirst++;
      if (performance.now() - committed > 10_000) throw new Error('a commit did not show within 10 s');
    }
  }
} finally {
  await other.close();
  await t.close();
  await server?.stop();
}
waits.sort((a, b) => a - b);
const at = (q: number) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!.toFixed(1);
process.stdout.write(
  `${rounds} commits: ${staleFirst} first reads stale; shown after p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${waits.at(-1)!.toFixed(1)} ms\n`,
);
process.exit(0);
