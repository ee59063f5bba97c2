// What the tests of docs/auditors.md share: the page, its fenced blocks, the example
// database it describes (built again through the service's own code) and the ways its
// commands and queries are run (test/audit/auditors-guide.test.ts says how).
import { spawnSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import * as assert from 'uvu/assert';
import { createBootstrapKey } from '../../src/application/access/bootstrap.ts';
import { appliedEntries, appliedEntry } from '../../src/application/write/commands.ts';
import type { Command } from '../../src/domain/decide.ts';
import type { PetStatus } from '../../src/domain/events.ts';
import { setQuantityCommand } from '../../src/http/input/preconditions.ts';
import type { SigningKeyData } from '../../src/support/signing.ts';
import { openStore } from './stores.ts';
import { commandsOn, createKey, entriesOf, lastSeqOf } from './fixtures.ts';
import { root } from './paths.ts';
import { recomputeChain, withFile } from './tamper.ts';

export const PAGE = 'docs/auditors.md';
export const KEEPING = "Keeping the head's digests";
export const SIGNED = 'Signed heads and receipts: proof for people without the database';
export const PAGE_DB = 'data/inventory.db';
/** The headings of the log verifiers in Go and Python, run against a service by a test of their own. */
export const LOG_VERIFIERS = ['A verifier in Go', 'A verifier in Python'];
/** The heading of the tile verifier in Go, run against a service and a copy by a test of its own. */
export const TILE_VERIFIER = "Go's TileHashReader: every tile, checked";
const BIG = 9007199254740993n;
const MAX = 9223372036854775807n;

// ---------------------------------------------------------------------------------------
// The example database, as the guide describes it ("The example database": four steps,
// about a second apart). The clock is set to `at` before each row. Every time and request
// id here is one that the page's outputs show, except the few marked INVENTED, which no
// output shows (the test checks both ways). The invented request ids are hashed into the
// chain all the same: they are the ones the page's digests were computed with.

type Act =
  | { kind: 'bootstrap key' } // the service's first start (src/application/access/bootstrap.ts)
  | { kind: 'key'; name: string } // scripts/keys create NAME
  | { kind: 'commands'; commands: Command[] } // one request, or one operator command
  | { kind: 'refused'; command: Command } // a request refused by its command: writes nothing
  | { kind: 'GET /v1/inventory'; matches: string }; // the projection then, equal to (f) at `matches`

interface Step {
  at: string;
  /** The seqs its events get, in order. */
  seqs: number[];
  actor: string;
  requestId: string;
  act: Act;
}

const track = (petId: bigint, quantity: number, status: PetStatus = 'available'): Command => ({
  type: 'TrackPet',
  petId,
  quantity,
  status,
});
/** A PATCH, built by the route's own function. */
const patch = (petId: bigint, quantity: number, ifMatch?: string): Command =>
  setQuantityCommand(petId, quantity, ifMatch === undefined ? {} : { 'if-match': ifMatch });
const setStatus = (petId: bigint, status: PetStatus): Command => ({ type: 'SetStatus', petId, status });
const run = (...commands: Command[]): Act => ({ kind: 'commands', commands });

const INVENTED = {
  bootstrapKeyAt: '2026-11-21T18:57:36.500Z',
  seq2At: '2026-11-21T18:57:37.900Z',
  seq2RequestId: '5f0c1d2e-0000-4000-8000-000000000002',
  fileRequestId: '5f0c1d2e-0000-4000-8000-000000000003',
  seq12RequestId: '5f0c1d2e-0000-4000-8000-000000000012',
  refusedAt: '2026-11-21T18:57:43.100Z',
  refusedRequestId: '5f0c1d2e-0000-4000-8000-000000000412',
};

// prettier-ignore
const EXAMPLE: Step[] = [
  // the clock                   its seqs       actor          request id                                   what happened
  // 1. The service starts on an empty database; the operator adds a key and tracks pets.
  { at: INVENTED.bootstrapKeyAt,    seqs: [],     actor: 'service:first-start', requestId: '',                                     act: { kind: 'bootstrap key' } },
  { at: '2026-11-21T18:57:36.992Z', seqs: [],     actor: 'cli:root',    requestId: '',                                     act: { kind: 'key', name: 'store-front' } },
  { at: '2026-11-21T18:57:37.408Z', seqs: [1],    actor: 'cli:root',    requestId: 'bb61db45-26f0-4842-b75a-850e0a1a993c', act: run(track(1n, 5)) },
  { at: INVENTED.seq2At,            seqs: [2],    actor: 'cli:root',    requestId: INVENTED.seq2RequestId,                 act: run(track(BIG, 0)) },
  { at: '2026-11-21T18:57:38.389Z', seqs: [3, 4], actor: 'cli:root',    requestId: INVENTED.fileRequestId,                 act: run(track(10n, 3), track(MAX, 1, 'pending')) },
  // 2. bootstrap counts pet 1 twice; the operator sets it to pending.
  { at: '2026-11-21T18:57:39.657Z', seqs: [5],    actor: 'bootstrap',   requestId: 'recount-42',                           act: run(patch(1n, 7)) },
  { at: '2026-11-21T18:57:39.670Z', seqs: [6],    actor: 'bootstrap',   requestId: 'fa63d48c-375a-481a-acfa-10e12e276869', act: run(patch(1n, 8, '"2"')) },
  { at: '2026-11-21T18:57:40.028Z', seqs: [7],    actor: 'cli:root',    requestId: '0ade1acb-757d-418c-a55d-b76308e26c6e', act: run(setStatus(1n, 'pending')) },
  { at: '2026-11-21T18:57:41.254Z', seqs: [],     actor: 'bootstrap',   requestId: '',                                     act: { kind: 'GET /v1/inventory', matches: '2026-11-21T18:57:41Z' } },
  // 3. store-front: pet 1 to 6, then 6 again (a confirmed count); pet BIG to 12, pet 10 to 0.
  { at: '2026-11-21T18:57:41.272Z', seqs: [8],    actor: 'store-front', requestId: '8fe6f289-f2af-438f-93d3-251866484765', act: run(patch(1n, 6)) },
  { at: '2026-11-21T18:57:41.282Z', seqs: [9],    actor: 'store-front', requestId: 'f74df90f-4db7-46a1-9ae4-2c58b6336cb1', act: run(patch(1n, 6)) },
  { at: '2026-11-21T18:57:41.290Z', seqs: [10],   actor: 'store-front', requestId: '849e0aea-24e1-4d45-b134-0180cca7b5d4', act: run(patch(BIG, 12)) },
  { at: '2026-11-21T18:57:41.298Z', seqs: [11],   actor: 'store-front', requestId: '1740042a-905a-4062-b800-945951731875', act: run(patch(10n, 0)) },
  { at: '2026-11-21T18:57:42.502Z', seqs: [],     actor: 'bootstrap',   requestId: '',                                     act: { kind: 'GET /v1/inventory', matches: '2026-11-21T18:57:42.5Z' } },
  // 4. The operator sells pet 10; a delivery of pet BIG; a stale If-Match is refused (the
  //    quantity of -1 is refused by the route's validation, before any command: nothing to replay).
  { at: '2026-11-21T18:57:42.871Z', seqs: [12],   actor: 'cli:root',    requestId: INVENTED.seq12RequestId,                act: run(setStatus(10n, 'sold')) },
  { at: '2026-11-21T18:57:42.922Z', seqs: [13],   actor: 'bootstrap',   requestId: 'delivery-2026-11-21',                  act: run(patch(BIG, 40)) },
  { at: INVENTED.refusedAt,         seqs: [],     actor: 'bootstrap',   requestId: INVENTED.refusedRequestId,              act: { kind: 'refused', command: patch(1n, 9, '"3"') } },
];

export interface InventorySeen {
  matches: string;
  rows: string[][];
}

/** The example service's signing key: a fixed Ed25519 seed (PKCS#8 DER around it), so
 * that the key log, and what the page shows of it, is the same on every run. */
export const EXAMPLE_SIGNING_KEY: SigningKeyData = {
  pem: createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, 7)]),
    format: 'der',
    type: 'pkcs8',
  }).export({ type: 'pkcs8', format: 'pem' }) as string,
};

/** Builds the example at db; returns what GET /v1/inventory would have answered at each read. */
export async function buildExample(db: string): Promise<InventorySeen[]> {
  // The service enters its signing key in the key log as it opens the database, at its
  // first start, before it creates the bootstrap key.
  let clock = Date.parse(EXAMPLE[0]!.at);
  const store = await openStore(db, { now: () => clock, signingKey: EXAMPLE_SIGNING_KEY });
  const seen: InventorySeen[] = [];
  try {
    const commands = commandsOn(store, () => clock);
    for (const step of EXAMPLE) {
      clock = Date.parse(step.at);
      const meta = { actor: step.actor, requestId: step.requestId };
      const { act } = step;
      const before = await lastSeqOf(store);
      switch (act.kind) {
        case 'bootstrap key':
          assert.ok(await createBootstrapKey(store.keys), 'the first start creates the bootstrap key');
          break;
        case 'key':
          await createKey(store, act.name, step.actor);
          break;
        case 'commands':
          // scripts/track tracks a file (or one pet) all or nothing; PATCH and scripts/set-status go one at a time.
          if (act.commands.every((c) => c.type === 'TrackPet')) await commands.handleAll(act.commands, meta).then(appliedEntries);
          else for (const c of act.commands) await commands.handle(c, meta).then(appliedEntry);
          break;
        case 'refused':
          {
            const result = await commands.handle(act.command, meta);
            assert.ok(result.kind === 'refused' && result.refusal.reason === 'precondition_failed', `${step.at}: the request is refused`);
          }
          break;
        case 'GET /v1/inventory':
          seen.push({
            matches: act.matches,
            rows: (await entriesOf(store)).map((e) => [String(e.petId), String(e.quantity), e.status]),
          });
          break;
      }
      const after = await lastSeqOf(store);
      assert.equal(
        Array.from({ length: after - before }, (_, i) => before + 1 + i),
        step.seqs,
        `${step.at}: the seqs of its events`,
      );
    }
  } finally {
    await store.close();
  }
  return seen;
}

// ---------------------------------------------------------------------------------------
// The page's blocks.

export interface Block {
  lang: string;
  text: string;
  line: number;
  /** The nearest heading above it, without its #s. */
  heading: string;
  /** The prose between the previous block and this one. */
  before: string;
}

export function pageText(): string {
  return readFileSync(join(root, PAGE), 'utf8');
}

export function blocks(page: string): Block[] {
  const found: Block[] = [];
  let end = 0;
  for (const m of page.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const above = page.slice(0, m.index);
    const headings = [...above.matchAll(/^#{2,3} (.+)$/gm)];
    found.push({
      lang: m[1]!,
      text: m[2]!,
      line: above.split('\n').length,
      heading: headings.at(-1)?.[1] ?? '',
      before: page.slice(end, m.index),
    });
    end = m.index + m[0].length;
  }
  return found;
}

// Blocks that are not examples to run, each with the reason. Each must match exactly one block.
export const NOT_RUN: [RegExp, string][] = [
  [/^PGOPTIONS=/, "it connects to the reader's own PostgreSQL server (HOST) as a role this test does not have"],
  [/^scripts\/audit \[--pet/, "the command's usage text"],
  [/^hash = SHA-256\(/, 'the encoding, written out, not a program'],
  [
    /^-- question: one pet's history\n/,
    'the questions at scale: npm run bench:audit runs them on its log of 1,000,000 events, read from this block',
  ],
  [
    /^-- question: gaps in time longer than three days, whole log \(PostgreSQL\)\n/,
    "the questions at scale, PostgreSQL's form: npm run bench:audit runs it",
  ],
];

/** The $ lines of the verify-log story say, in a comment, what happened to the database before them. */
export const STORY: Record<string, (db: string) => void> = {
  "after someone dropped the trigger and changed seq 1's quantity from 5 to 50": (db) =>
    withFile(db, (raw) => {
      raw.exec('DROP TRIGGER events_no_update');
      const changed = raw.prepare(`UPDATE events SET data = replace(data, '"quantity":5,', '"quantity":50,') WHERE seq = 1`).run();
      assert.is(changed.changes, 1);
    }),
  '... and then recomputed the whole chain and stock_adjustments, and put the trigger back': (db) =>
    withFile(db, (raw) => {
      recomputeChain(raw);
      // The first adjustment of pet 1 starts from the quantity its PetTracked now says.
      const triggers = raw
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'stock_adjustments'")
        .all() as {
        name: string;
        sql: string;
      }[];
      for (const { name } of triggers) raw.exec(`DROP TRIGGER ${name}`);
      const redone = raw
        .prepare(
          'UPDATE stock_adjustments SET previous_quantity = 50 WHERE seq = (SELECT min(seq) FROM stock_adjustments WHERE pet_id = 1)',
        )
        .run();
      assert.is(redone.changes, 1);
      for (const { sql } of triggers) raw.exec(sql);
      raw.exec(
        "CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE is not allowed'); END;",
      );
    }),
};

export const tidy = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();

/** One shell command line as the page writes it, with the example's path for data/inventory.db. */
export function shell(command: string, db: string, options: { cwd?: string; input?: string } = {}): { output: string; status: number } {
  const r = spawnSync('bash', ['-c', `exec 2>&1\n${command.replaceAll(PAGE_DB, db)}`], {
    cwd: options.cwd ?? root,
    env: { ...process.env, INVENTORY_DB: db },
    input: options.input ?? '',
    encoding: 'utf8',
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  assert.ok(r.status !== null, `${command}: did not finish (${r.error?.message ?? r.signal})`);
  return { output: r.stdout, status: r.status };
}

/** Runs the $ lines of a block and returns the transcript as the page would show it. */
export function transcript(text: string, db: string, scratch: string): string {
  const showsExit = text.includes('\n(exit ');
  const out: string[] = [];
  for (const line of text.split('\n').filter((l) => l.startsWith('$ '))) {
    const comment = /\s#\s*(.*)$/.exec(line)?.[1];
    if (comment !== undefined) {
      const act = STORY[comment];
      assert.ok(act, `${line}: the test does not know what happened before this command (STORY)`);
      act(db);
    }
    const command = line.slice(2);
    if (command.includes('verify_chain.py')) assert.ok(existsSync(join(scratch, 'verify_chain.py')), 'the Python block comes first');
    const r = shell(command, db, { cwd: command.includes('verify_chain.py') ? scratch : root });
    out.push(line);
    if (r.output.trimEnd() !== '') out.push(r.output.trimEnd());
    if (showsExit || r.status !== 0) out.push(`(exit ${r.status})`);
  }
  return out.join('\n');
}

/** A query's columns and rows, every value as text (integers exact) or null. */
export interface Rows {
  columns: string[];
  rows: (string | null)[][];
}

function asText(v: unknown): string | null {
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'number') return String(v);
  throw new Error(`a value of type ${typeof v} in a query's result`);
}

export function sqliteRows(db: string, sql: string): Rows {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const statement = conn.prepare(sql).safeIntegers(true).raw(true);
    return {
      columns: statement.columns().map((c) => c.name),
      rows: (statement.all() as unknown[][]).map((r) => r.map(asText)),
    };
  } finally {
    conn.close();
  }
}

export async function postgresRows(client: pg.Client, sql: string): Promise<Rows> {
  const result = await client.query<unknown[]>({ text: sql, rowMode: 'array' });
  return { columns: result.fields.map((f) => f.name), rows: result.rows.map((r) => r.map(asText)) };
}
