// An event its actor could not have written, appended chained and past every guard, is
// BROKEN for verify-log, by --db and through the running service's API by --url:
// operators' commands (cli:…) track pets and set their status, a key's PATCH sets a
// quantity, and a read-only key writes nothing. The keys' scopes are not served, so
// the read-only key's event is caught by --db alone.
import { generateKeyPairSync } from 'node:crypto';
import * as assert from 'uvu/assert';
import type { TestApp } from '../kit/app.ts';
import { runScript } from '../kit/scripts.ts';
import { appSuite } from '../kit/suites.ts';
import { forgedEventSql, type ForgedEvent } from '../kit/tamper.ts';

const KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };

const actors = appSuite('verify-log: an event of a type its actor could not write', {
  app: { signingKey: KEY },
  async given(t) {
    await t.track(1, 5);
    assert.is((await t.patch(1, { quantity: 3 })).status, 200);
  },
});

/** Appends the forged event after the newest one, chained (PostgreSQL's head moved on). */
async function forge(t: TestApp, f: Omit<ForgedEvent, 'version' | 'quantity' | 'recordedAt'>): Promise<number> {
  let last: [bigint, string] = [0n, ''];
  for await (const page of t.store.chainRows()) for (const row of page) last = [row[0], row[9]!];
  const seq = last[0] + 1n;
  const forged = forgedEventSql(seq, last[1], { version: 3, quantity: 1, recordedAt: '2026-01-02T03:04:06.000Z', ...f });
  const head = t.target.name === 'postgres' ? `;\nUPDATE chain_head SET seq = ${seq}, hash = '${forged.hash}'` : '';
  await t.target.tamper.pastGuards(t.db, forged.sql + head);
  return Number(seq);
}

const byDb = (t: TestApp) => runScript('verify-log', ['--db', t.db]);
const byUrl = (t: TestApp) => runScript('verify-log', ['--url', `http://127.0.0.1:${t.port}`], { env: { INVENTORY_KEY: t.key } });

actors('the intact log passes both ways', async ({ t }) => {
  for (const r of [await byDb(t), await byUrl(t)]) assert.is(r.status, 0, r.stderr);
});

for (const [what, forged, message] of [
  [
    "a QuantitySet in an operator's name",
    { actor: 'cli:root' },
    'its actor "cli:root" is an operator, whose commands write PetTracked and StatusSet, not QuantitySet: the event was made outside the service',
  ],
  [
    "a StatusSet in a key's name",
    { actor: 'tester', type: 'StatusSet' },
    'its actor "tester" is an API key, whose PATCH writes QuantitySet, not StatusSet: the event was made outside the service',
  ],
] as const) {
  actors(`${what} is BROKEN, by --db and by --url`, async ({ t }) => {
    const seq = await forge(t, forged);
    for (const [how, r] of [
      ['--db', await byDb(t)],
      ['--url', await byUrl(t)],
    ] as const) {
      assert.is(r.status, 1, `${how}: ${r.stderr}`);
      assert.is(r.stderr, `error: BROKEN at seq ${seq}: ${message}\n`, how);
      assert.is(r.stdout, '', how);
    }
  });
}

actors("an event in a read-only key's name is BROKEN by --db", async ({ t }) => {
  await t.keys.create('auditor', 'cli:ops', 'read-only');
  const seq = await forge(t, { actor: 'auditor' });
  const r = await byDb(t);
  assert.is(r.status, 1, r.stderr);
  assert.is(
    r.stderr,
    `error: BROKEN at seq ${seq}: its actor "auditor" is a read-only key, which writes nothing: the event was made outside the service\n`,
  );
});

actors.run();
