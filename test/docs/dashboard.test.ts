// The Grafana dashboard and the PromQL of the operators' guide, evaluated by a real
// Prometheus that scrapes two services under load, one on SQLite and one on
// PostgreSQL: every expression must be valid PromQL and must find data, so a renamed
// metric or a mistyped label fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { docsPromql, type Dashboard } from '../kit/docs.ts';
import { root, tempDir } from '../kit/paths.ts';
import { freshPostgresDatabase } from '../kit/postgres-server.ts';
import { startPrometheus } from '../kit/prometheus.ts';
import { runScript } from '../kit/scripts.ts';
import { startService, type Service } from '../kit/service.ts';
import { needing, tools } from '../kit/tools.ts';

/** What Grafana's import reads of a dashboard exported for sharing externally. */
interface Shared {
  __inputs?: { name: string; type: string; pluginId: string }[];
  __requires?: { type: string; id: string }[];
  panels: { title: string; datasource: unknown; targets: { datasource: unknown }[] }[];
}

const test = suite('the dashboard and the documented PromQL, on a real Prometheus');

/** Requests of every kind the panels show, for at most `ms` (bounded in count too). */
async function drive(services: { s: Service; key: string }[], ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (let i = 0; i < 2000 && Date.now() < until; i++) {
    await Promise.all(
      services.flatMap(({ s, key }) => [
        s.request({
          method: 'PATCH',
          path: `/v1/inventory/${1 + (i % 3)}`,
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ quantity: i % 50 }),
        }),
        s.get('/v1/inventory', key),
        s.get('/v1/inventory', key),
      ]),
    );
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Polls check every 250 ms until it holds; fails after 15 s with what it waited for. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.unreachable(`waited 15 s in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test("the dashboard is in Grafana's form for sharing externally: its import asks for the Prometheus data source", () => {
  const text = readFileSync(join(root, 'docs/grafana/inventory-dashboard.json'), 'utf8');
  const dashboard = JSON.parse(text) as Shared;
  const inputs = dashboard.__inputs ?? [];
  assert.equal(
    inputs.map((i) => [i.type, i.pluginId]),
    [['datasource', 'prometheus']],
    'one input, a Prometheus data source',
  );
  const uid = `\${${inputs[0]!.name}}`;
  assert.ok(
    dashboard.__requires?.some((r) => r.type === 'datasource' && r.id === 'prometheus'),
    '__requires names Prometheus',
  );
  for (const panel of dashboard.panels) {
    assert.equal(panel.datasource, { type: 'prometheus', uid }, `panel "${panel.title}" reads the chosen data source`);
    for (const target of panel.targets) assert.equal(target.datasource, { type: 'prometheus', uid }, `a query of "${panel.title}"`);
  }
  // Every ${...} is the input: Grafana's import replaces only the inputs' names.
  assert.equal([...new Set(text.match(/\$\{\w+\}/g))], [uid]);
});

needing(test, [tools.prometheus])('every panel and every documented query finds data', async () => {
  const dashboard = JSON.parse(readFileSync(join(root, 'docs/grafana/inventory-dashboard.json'), 'utf8')) as Dashboard;
  const exprs = [
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
    ...docsPromql().map((expr) => ({ where: 'docs/operators.md', expr })),
  ];
  assert.ok(exprs.length >= 14, `${exprs.length} expressions`);

  const dir = tempDir('dashboard-');
  const pg = await freshPostgresDatabase();
  const started: Service[] = [];
  try {
    const sqlite = await startService({ db: dir.path('inventory.db'), expectKey: true });
    started.push(sqlite);
    const postgres = await startService({ db: pg.url, expectKey: true });
    started.push(postgres);
    for (const db of [dir.path('inventory.db'), pg.url]) {
      for (const pet of ['1', '2', '3']) {
        const tracked = await runScript('track', [pet, '--quantity', '5'], { db });
        assert.is(tracked.status, 0, tracked.stderr);
      }
    }
    const prometheus = await startPrometheus([sqlite.port, postgres.port]);
    try {
      const services = [
        { s: sqlite, key: sqlite.bootstrapKey! },
        { s: postgres, key: postgres.bootstrapKey! },
      ];
      // Prometheus takes up new targets a few seconds after its start: wait for the
      // first scrapes of both, then drive; rate() needs two scrapes after a counter moved.
      await eventually(async () => (await prometheus.query('up{job="inventory"} == 1')).length === 2, 'both services scraped');
      await drive(services, 5_000);
      for (const { where, expr } of exprs) {
        await eventually(async () => (await prometheus.query(expr)).length > 0, `${where}: data for ${expr}`);
        for (const { value } of await prometheus.query(expr)) {
          assert.ok(value[1] === 'NaN' || Number.isFinite(Number(value[1])), `${where}: ${value[1]}`);
        }
      }
      const up = await prometheus.query('up{job="inventory"} == 1');
      assert.is(up.length, 2, 'both services were scraped');
    } finally {
      await prometheus.stop();
    }
  } finally {
    for (const s of started) await s.stop();
    await pg.cleanup();
    dir.cleanup();
  }
});

test.run();
