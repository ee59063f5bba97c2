// SQLite's pages of stock_adjustments are read through whichever index their plan picks
// (a pet's, an actor's, the time index, or the table in seq order from a start the time
// index gives), and every plan must give the same rows: those of the filter, in seq
// order, after the page's start. Here the plans are forced by the capped count's limit
// (1: every window and actor is "large"; a million: every one is "small") on a log whose
// clock goes back and forth, with an actor seen only late, and compared with the rows
// filtered here from the whole table.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AuditFilter } from '../../src/store/audit-reads.ts';
import type { Submission } from '../../src/store/event-log.ts';
import { openStore } from '../../src/store/open.ts';
import { makePageQuery } from '../../src/store/sqlite/reads/adjustment-pages.ts';
import { tempDir } from '../kit/paths.ts';
import { targetSuites } from '../kit/suites.ts';

const PETS = 3;
const START = Date.parse('2026-03-01T09:00:00.000Z');

/** 600 adjustments an hour apart, but for a stretch recorded two days early (a clock set
 * back, then right again); clerk-late only in the last hundred. */
function log(): Submission[] {
  const submissions: Submission[] = [];
  for (let pet = 1; pet <= PETS; pet++)
    submissions.push({
      meta: { actor: 'ops', requestId: `track-${pet}` },
      recordedAt: new Date(START).toISOString(),
      appends: [{ petId: BigInt(pet), expectedVersion: 0, events: [{ type: 'PetTracked', data: { quantity: 10, status: 'available' } }] }],
    });
  const versions = new Map<number, number>();
  for (let i = 1; i <= 600; i++) {
    const pet = 1 + (i % PETS);
    const version = versions.get(pet) ?? 1;
    versions.set(pet, version + 1);
    const skew = i >= 300 && i < 340 ? -48 * 3600_000 : 0;
    const actor = i > 500 ? (i % 2 === 0 ? 'clerk-late' : 'clerk-a') : i % 3 === 0 ? 'clerk-b' : 'clerk-a';
    submissions.push({
      meta: { actor, requestId: `r${i}` },
      recordedAt: new Date(START + i * 3600_000 + skew).toISOString(),
      appends: [{ petId: BigInt(pet), expectedVersion: version, events: [{ type: 'QuantitySet', data: { quantity: i % 50 } }] }],
    });
  }
  return submissions;
}

const at = (hours: number) => new Date(START + hours * 3600_000).toISOString();

function filters(): AuditFilter[] {
  const windows: Pick<AuditFilter, 'since' | 'until'>[] = [
    {},
    { since: at(100), until: at(124) },
    { since: at(290), until: at(320) },
    { since: at(500) },
    { since: at(250) },
    { until: at(310) },
    { since: at(700) },
  ];
  const found: AuditFilter[] = [];
  for (const window of windows)
    for (const who of [{}, { pet: 2n }, { actor: 'clerk-late' }, { actor: 'clerk-b' }, { pet: 1n, actor: 'clerk-a' }])
      for (const after of [undefined, 150n, 450n]) found.push({ ...window, ...who, ...(after === undefined ? {} : { after }) });
  return found;
}

/** A row as the table gives it: seq and pet_id bigints, the rest as stored. */
type Row = { seq: bigint; pet_id: bigint; actor: string; recorded_at: string };

function expected(all: Row[], f: AuditFilter): Row[] {
  return all.filter(
    (r) =>
      r.seq > (f.after ?? 0n) &&
      (f.pet === undefined || r.pet_id === f.pet) &&
      (f.actor === undefined || r.actor === f.actor) &&
      (f.since === undefined || r.recorded_at >= f.since) &&
      (f.until === undefined || r.recorded_at < f.until),
  );
}

test('every plan gives the filter rows in seq order, whatever the index it reads', async () => {
  const tmp = tempDir('adjustment-pages-');
  try {
    const file = join(tmp.dir, 'pages.db');
    const store = await openStore(file);
    for (const outcome of await store.appendBatch(log()))
      if (!outcome.ok) throw 'error' in outcome ? (outcome.error as Error) : new Error(outcome.refused.reason);
    await store.close();
    const db = new Database(file, { readonly: true });
    try {
      const all = db
        .prepare(
          'SELECT seq, recorded_at, pet_id, previous_quantity, quantity, delta, actor, request_id FROM stock_adjustments ORDER BY seq',
        )
        .safeIntegers(true)
        .all() as Row[];
      assert.is(all.length, 600);
      for (const cap of [1, 1_000_000]) {
        const pageOf = makePageQuery(db, cap);
        for (const f of filters()) {
          const query = pageOf(f);
          const rows = [];
          for (let page = query.page(query.after); page.length > 0; page = query.page(BigInt(page.at(-1)!.seq!))) rows.push(...page);
          const want = expected(all, f);
          const shown = `cap ${cap}, filter ${JSON.stringify(f, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`;
          assert.equal(
            rows.map((r) => String(r.seq)),
            want.map((r) => String(r.seq)),
            shown,
          );
        }
      }
    } finally {
      db.close();
    }
  } finally {
    tmp.cleanup();
  }
});

// The same filters through the storage port, on both stores: PostgreSQL starts a window's
// walk in seq order from the window's first row, which the same log's clock puts to the test.
const port = targetSuites('audit pages through the port');

port('every filter gives its rows in seq order', async ({ target }) => {
  const fresh = await target.fresh();
  try {
    const store = await target.open(fresh.db);
    try {
      for (const outcome of await store.appendBatch(log()))
        if (!outcome.ok) throw 'error' in outcome ? (outcome.error as Error) : new Error(outcome.refused.reason);
      const all: Row[] = [];
      for await (const page of store.stockAdjustments({}))
        all.push(
          ...page.map((r) => ({
            seq: BigInt(r.seq!),
            pet_id: BigInt(r.pet_id!),
            actor: String(r.actor),
            recorded_at: String(r.recorded_at),
          })),
        );
      assert.is(all.length, 600);
      for (const f of filters()) {
        const seqs: string[] = [];
        for await (const page of store.stockAdjustments(f)) seqs.push(...page.map((r) => String(r.seq)));
        const shown = `filter ${JSON.stringify(f, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`;
        assert.equal(
          seqs,
          expected(all, f).map((r) => String(r.seq)),
          shown,
        );
      }
    } finally {
      await store.close();
    }
  } finally {
    await fresh.cleanup();
  }
});

test.run();
port.run();
