// What the tests of scripts/audit share: each test seeds a fresh database of its store
// target in-process, with an injected clock so that recorded_at is known to the
// millisecond, closes it, and runs the real wrapper script as a child process; the outcome
// is judged by exit status, standard output and error.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import type { Command } from '../../src/domain/decide.ts';
import { seedSteps } from './fixtures.ts';
import { runScript, type ScriptResult as Result } from './scripts.ts';
import { targetSuites, type OnTarget } from './suites.ts';

export const BIG = 9007199254740993n; // 2^53 + 1: a double would round it to ...992

/** Runs scripts/audit with args; INVENTORY_DB is unset unless env sets it. */
export function audit(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return runScript('audit', args, { env });
}

export function expectExit(r: Result, status: number, what: string): void {
  assert.is(r.status, status, `${what}: exit ${r.status}, expected ${status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

export interface Ctx {
  db: string;
  cleanup: () => Promise<void>;
}
/** Suites on every store target whose tests each get a fresh database. */
export const auditSuite = (name: string) =>
  targetSuites<Ctx>(name, {
    async beforeEach(ctx) {
      const fresh = await ctx.target.fresh();
      ctx.db = fresh.db;
      ctx.cleanup = fresh.cleanup;
    },
    afterEach: (ctx) => ctx.cleanup(),
  });

export const track = (petId: bigint, quantity: number): Command => ({ type: 'TrackPet', petId, quantity, status: 'available' });
export const set = (petId: bigint, quantity: number): Command => ({ type: 'SetQuantity', petId, quantity });

// The fixture most tests share. Stock adjustments (seq: pet, previous -> new, actor, time):
//   4: pet 1    5 -> 7   alice        10:00:00.000Z
//   5: pet 2   10 -> 4   bob          10:00:00.001Z
//   6: BIG      0 -> 12  alice        11:59:59.999Z
//   7: pet 1    7 -> 7   bob          12:00:00.000Z  (a confirmed count; seq 8, a StatusSet, is not a row)
//   9: pet 1    7 -> 3   alice        13:00:00.000Z
export async function seedFixture(on: OnTarget & { db: string }): Promise<void> {
  await seedSteps(on, [
    { at: '2026-11-21T09:00:00.000Z', actor: 'cli:seed', requestId: 'seed', commands: [track(1n, 5), track(2n, 10), track(BIG, 0)] },
    { at: '2026-11-21T10:00:00.000Z', actor: 'alice', requestId: 'r1', commands: [set(1n, 7)] },
    { at: '2026-11-21T10:00:00.001Z', actor: 'bob', requestId: 'r2', commands: [set(2n, 4)] },
    { at: '2026-11-21T11:59:59.999Z', actor: 'alice', requestId: 'r3', commands: [set(BIG, 12)] },
    {
      at: '2026-11-21T12:00:00.000Z',
      actor: 'bob',
      requestId: 'r4',
      commands: [set(1n, 7), { type: 'SetStatus', petId: 1n, status: 'pending' }],
    },
    { at: '2026-11-21T13:00:00.000Z', actor: 'alice', requestId: 'r5', commands: [set(1n, 3)] },
  ]);
}

/** The seq column of a CSV listing (its first field), header left out. */
function seqs(r: Result): number[] {
  return r.stdout
    .split('\n')
    .slice(1)
    .filter((line) => line !== '')
    .map((line) => Number(line.split(',')[0]));
}

/**
 * Runs each listing at once (they only read; a process start is most of their time) and
 * checks the seqs each one printed.
 */
export async function expectListings(db: string, cases: [args: string[], seqs: number[], why?: string][]): Promise<void> {
  const results = await Promise.all(cases.map(([args]) => audit([...args, '--format', 'csv', '--db', db])));
  cases.forEach(([args, expected, why], i) => {
    const what = `audit ${args.join(' ')}${why ? ` (${why})` : ''}`;
    expectExit(results[i]!, 0, what);
    assert.equal(seqs(results[i]!), expected, what);
  });
}

export function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}
