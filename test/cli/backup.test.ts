// scripts/backup (SQLite only: PostgreSQL has pg_dump): an online copy that refuses to
// overwrite, is readable by its owner only, verifies, and, in a restore drill under
// write load, holds every write acknowledged before it began.
import { spawnSync } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openStore } from '../kit/stores.ts';
import { commandsOn, trackPets } from '../kit/fixtures.ts';
import { startPostgres } from '../../scripts/embedded-postgres.ts';
import { runSql, type TestDatabase } from '../kit/postgres-server.ts';
import { fencedBlocks } from '../kit/docs.ts';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
import { dumpableDatabases } from '../kit/pg-dump.ts';
import { runScript, spawnScript } from '../kit/scripts.ts';
import { startService, type Service } from '../kit/service.ts';
import { withFile } from '../kit/tamper.ts';
import { needing, tools } from '../kit/tools.ts';
import { newSigningKey } from '../kit/signing-keys.ts';

const DIGEST = /^\d+:[0-9a-f]{64}\n$/;

const test = suite<{ dir: TempDir }>('scripts/backup [sqlite] (SQLite only: PostgreSQL backups are pg_dump)');
test.before.each((ctx) => {
  ctx.dir = tempDir('backup-');
});
test.after.each(({ dir }) => dir.cleanup());

async function database(path: string, pets: number): Promise<void> {
  const store = await openStore(path);
  try {
    if (pets > 0)
      await trackPets(
        store,
        Array.from({ length: pets }, (_, i) => ({ petId: i + 1, quantity: 1 })),
      );
  } finally {
    await store.close();
  }
}

test('usage errors exit 2; a PostgreSQL URL is refused with the pg_dump way', async ({ dir }) => {
  for (const args of [[], ['a.db', 'b.db'], ['--nope', 'a.db'], ['']]) {
    const r = await runScript('backup', args, { db: dir.path('inventory.db') });
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  const pg = await runScript('backup', [dir.path('copy.db')], { db: 'postgres://someone@127.0.0.1:1/inventory' });
  assert.is(pg.status, 1);
  assert.match(pg.stderr, /^error: .*pg_dump/);
  assert.not.ok(existsSync(dir.path('copy.db')));
});

test('a missing folder for OUT is named, not blamed on the file; nothing is created', async ({ dir }) => {
  await database(dir.path('inventory.db'), 1);
  const r = await runScript('backup', [dir.path('nope/copy.db')], { db: dir.path('inventory.db') });
  assert.is(r.status, 1);
  assert.match(r.stderr, /^error: the folder .*nope does not exist: create it first \(mkdir -p .*nope\), then run the backup again\n$/);
  assert.not.ok(existsSync(dir.path('nope')));
});

test('never overwrites: an existing OUT is refused and left as it was', async ({ dir }) => {
  await database(dir.path('inventory.db'), 3);
  writeFileSync(dir.path('copy.db'), 'precious');
  const r = await runScript('backup', [dir.path('copy.db')], { db: dir.path('inventory.db') });
  assert.is(r.status, 1);
  assert.match(r.stderr, /already exists: a backup never overwrites/);
  assert.is(readFileSync(dir.path('copy.db'), 'utf8'), 'precious');
});

test('a database that is not there (or not a database) fails and leaves nothing at OUT', async ({ dir }) => {
  const missing = await runScript('backup', [dir.path('copy.db')], { db: dir.path('nope.db') });
  assert.is(missing.status, 1);
  assert.match(missing.stderr, /no database at/);
  writeFileSync(dir.path('junk.db'), 'not a database at all, just some text that is long enough'.repeat(100));
  const junk = await runScript('backup', [dir.path('copy.db')], { db: dir.path('junk.db') });
  assert.is(junk.status, 1, junk.stderr);
  assert.not.ok(existsSync(dir.path('copy.db')), 'no partial copy is left');
});

test('the copy is 0600, verifies, and has the digest verify-log gives the database', async ({ dir }) => {
  await database(dir.path('inventory.db'), 5);
  const r = await runScript('backup', [dir.path('copy.db')], { db: dir.path('inventory.db') });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, DIGEST);
  assert.match(r.stderr, /^ok: .*copy\.db: 5 events, chain intact/);
  assert.is(statSync(dir.path('copy.db')).mode & 0o777, 0o600);
  const source = await runScript('verify-log', [], { db: dir.path('inventory.db') });
  const copy = await runScript('verify-log', [], { db: dir.path('copy.db') });
  assert.is(copy.status, 0, copy.stderr);
  assert.is(r.stdout, source.stdout, 'the same history');
  assert.is(copy.stdout, source.stdout);
});

test('a copy that does not verify is removed, and exits 1', async ({ dir }) => {
  await database(dir.path('inventory.db'), 5);
  // Someone with the file edits an event: the copy is faithful, so its chain is broken too.
  withFile(dir.path('inventory.db'), (db) => {
    db.exec('DROP TRIGGER events_no_update');
    db.prepare("UPDATE events SET actor = 'mallory' WHERE seq = 3").run();
  });
  const r = await runScript('backup', [dir.path('copy.db')], { db: dir.path('inventory.db') });
  assert.is(r.status, 1, r.stderr);
  assert.is(r.stdout, '', 'no digest for a broken copy');
  assert.match(r.stderr, /^error: the copy does not verify, so it was removed: BROKEN at seq 3: /);
  assert.not.ok(existsSync(dir.path('copy.db')), 'nothing that could pass for a backup is left');
});

test('interrupted (SIGINT, SIGTERM) while copying or verifying: exits 1 and leaves nothing at OUT', async ({ dir }) => {
  // Big enough that the copy and its verification take a few hundred milliseconds.
  await database(dir.path('inventory.db'), 30_000);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const out = dir.path(`copy-${signal}.db`);
    const child = spawnScript('backup', [out], { db: dir.path('inventory.db') });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // Signalled as soon as OUT exists: the copy has begun. The directory is watched from
    // before the copy can begin; a child that exits first ends the wait too.
    const watcher = watch(dir.dir);
    try {
      while (!existsSync(out) && child.exitCode === null) await Promise.race([once(watcher, 'change'), exited]);
    } finally {
      watcher.close();
    }
    assert.ok(existsSync(out), `${signal}: OUT appeared (${stderr})`);
    child.kill(signal);
    const status = await exited;
    assert.is(stdout, '', `${signal}: it did not finish before the signal`);
    assert.is(status, 1, `${signal}: ${stderr}`);
    assert.match(stderr, new RegExp(`^error: interrupted by ${signal}; the copy at .*, not yet verified, was removed\n$`));
    assert.not.ok(existsSync(out), `${signal}: no partial copy is left`);
  }
  assert.equal(
    readdirSync(dir.dir).filter((f) => f.startsWith('copy')),
    [],
    'no journal or other file of a copy either',
  );
});

test('restore drill: backed up under write load, every write acknowledged before it is in the copy', async ({ dir }) => {
  // Enough pets that the copy takes a while, so that writes go on while it is made.
  const PETS = 30_000;
  const WORKERS = 8;
  await database(dir.path('inventory.db'), PETS);
  let service: Service | undefined;
  let restored: Service | undefined;
  try {
    service = await startService({
      db: dir.path('inventory.db'),
      expectKey: true,
      env: { INVENTORY_SIGNING_KEY: dir.path('old-key.pem') },
    });
    const key = service.bootstrapKey!;
    const acked: { requestId: string; petId: number; quantity: number; at: number }[] = [];
    const failures: string[] = [];
    let stop = false;
    let backupStarted = Infinity;
    let backupEnded = Infinity;
    // Each worker owns its pets and writes them one at a time, with rising quantities.
    const worker = async (w: number) => {
      for (let n = 1; !stop && n <= 5000; n++) {
        const petId = 1 + ((w + WORKERS * n) % 64);
        const requestId = `drill-${w}-${n}`;
        const res = await service!.request({
          method: 'PATCH',
          path: `/v1/inventory/${petId}`,
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'X-Request-Id': requestId },
          body: JSON.stringify({ quantity: n }),
        });
        if (res.status === 200) acked.push({ requestId, petId, quantity: n, at: Date.now() });
        else failures.push(`${res.status} ${res.text}`);
        answers.emit('answer');
      }
    };
    const answers = new EventEmitter();
    /** Resolves once `count` writes are acknowledged; fails at the first write that failed. */
    const acknowledged = async (count: number, what: string) => {
      while (acked.length < count) {
        assert.equal(failures, [], `no write failed (${what})`);
        await once(answers, 'answer');
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    // The writers are under way before the backup starts, and go on after it ended.
    await acknowledged(51, 'before the backup');
    backupStarted = Date.now();
    const backup = await runScript('backup', [dir.path('copy.db')], { db: dir.path('inventory.db') });
    backupEnded = Date.now();
    const atEnd = acked.length;
    await acknowledged(atEnd + 20, 'after the backup');
    stop = true;
    await load;
    assert.is(backup.status, 0, backup.stderr);
    assert.equal(failures, [], 'no write failed while the backup ran');
    const during = acked.filter((a) => a.at > backupStarted && a.at < backupEnded).length;
    assert.ok(during > 0, `writes went on during the ${backupEnded - backupStarted} ms of the backup (${during} acknowledged)`);

    const before = acked.filter((a) => a.at < backupStarted);
    assert.ok(before.length > 20, `${before.length} writes acknowledged before the backup`);
    const copy = new Database(dir.path('copy.db'), { readonly: true });
    const inCopy = new Set(copy.prepare("SELECT request_id FROM events WHERE type = 'QuantitySet'").pluck().all() as string[]);
    copy.close();
    const lost = before.filter((a) => !inCopy.has(a.requestId));
    assert.equal(lost, [], 'every write acknowledged before the backup began is in the copy');

    // A service on the copy: it starts, serves, and its log verifies.
    const check = await runScript('rebuild-projection', ['--check'], { db: dir.path('copy.db') });
    assert.is(check.status, 0, check.stderr);
    const verified = await runScript('verify-log', [], { db: dir.path('copy.db') });
    assert.is(verified.status, 0, verified.stderr);
    assert.is(verified.stdout, backup.stdout, 'the digest the backup printed');
    // The copy is the log rewound: the key that signed past it refuses to sign it again.
    await service.stop();
    service = undefined;
    const refused = spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      cwd: root,
      env: {
        ...process.env,
        INVENTORY_DB: dir.path('copy.db'),
        INVENTORY_SIGNING_KEY: dir.path('old-key.pem'),
        PORT: '0',
        HOST: '127.0.0.1',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.is(refused.status, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /refusing to sign with .*old-key\.pem: this key signed a tree of \d+ events for log .*: the log was restored or cut/,
    );
    // A new key, endorsed by the old one, signs the restored log: endorse-signing, run
    // where both key files are, also leaves the new key's record of what it signed beside it.
    writeFileSync(dir.path('new-key.pem'), newSigningKey().pem, { mode: 0o600 });
    const endorsed = await runScript('keys', ['endorse-signing', dir.path('new-key.pem')], {
      db: dir.path('copy.db'),
      env: { INVENTORY_SIGNING_KEY: dir.path('old-key.pem') },
    });
    assert.is(endorsed.status, 0, endorsed.stderr);
    assert.match(endorsed.stderr, /^WARNING: the current key .*old-key\.pem has signed this log further than/m);
    restored = await startService({ db: dir.path('copy.db'), expectKey: false, env: { INVENTORY_SIGNING_KEY: dir.path('new-key.pem') } });
    const list = await restored.get('/v1/inventory', key);
    assert.is(list.status, 200, 'the key in the copy works');
    const quantities = new Map((JSON.parse(list.text) as { petId: number; quantity: number }[]).map((e) => [e.petId, e.quantity]));
    assert.is(quantities.size, PETS);
    for (const a of before) assert.ok(quantities.get(a.petId)! >= a.quantity, `pet ${a.petId} at least ${a.quantity}`);
    console.log(
      `restore drill: ${before.length} writes acknowledged before the backup, all in the copy; ${during} more during its ` +
        `${backupEnded - backupStarted} ms; ${acked.length} in all, 0 failed; digest of the copy ${backup.stdout.trim()}`,
    );
  } finally {
    await restored?.stop();
    await service?.stop();
  }
});

test.run();

// PostgreSQL has its own tools: the operators' guide's commands, run as written.
const pgTest = suite<{ dir: TempDir; databases: TestDatabase[] }>(
  "PostgreSQL backups: pg_dump --format=custom, pg_restore, and verify-log's digests [postgres]",
);
pgTest.before.each((ctx) => {
  ctx.dir = tempDir('pg-backup-');
  ctx.databases = [];
});
pgTest.after.each(async ({ dir, databases }) => {
  dir.cleanup();
  for (const d of databases) await d.cleanup();
});

const withPgTools = needing(pgTest, [tools.pgDump, tools.pgRestore]);

withPgTools('a dump restored into an empty database verifies, with a digest the live database extends', async (ctx) => {
  const [source, target] = await dumpableDatabases(ctx.databases);
  const store = await openStore(source);
  try {
    await trackPets(
      store,
      [1, 2, 3].map((petId) => ({ petId, quantity: petId })),
    );
  } finally {
    await store.close();
  }
  const dump = ctx.dir.path('inventory.dump');
  const dumped = spawnSync('pg_dump', ['--format=custom', `--file=${dump}`, source], { encoding: 'utf8' });
  assert.is(dumped.status, 0, dumped.stderr);
  const atDump = await runScript('verify-log', [], { db: source });
  assert.is(atDump.status, 0, atDump.stderr);

  // The service goes on writing after the dump.
  const live = await openStore(source);
  try {
    await commandsOn(live).handle({ type: 'SetStatus', petId: 2n, status: 'sold' }, { actor: 'cli:test', requestId: 'after-dump' });
  } finally {
    await live.close();
  }

  const restored = spawnSync('pg_restore', [`--dbname=${target}`, '--no-owner', '--exit-on-error', '--single-transaction', dump], {
    encoding: 'utf8',
  });
  assert.is(restored.status, 0, restored.stderr);
  const verified = await runScript('verify-log', [], { db: target });
  assert.is(verified.status, 0, verified.stderr);
  assert.match(verified.stderr, /^ok: 3 events, chain intact\nok: 0 key events, key chain intact, api_keys agrees\n/);
  assert.is(verified.stdout, atDump.stdout, 'the digest of the database when it was dumped');
  const extended = await runScript('verify-log', ['--digest', verified.stdout.trim()], { db: source });
  assert.is(extended.status, 0, extended.stderr);
  assert.match(extended.stderr, /^ok: 4 events, chain intact; it extends 3:/);
  assert.is.not(extended.stdout, verified.stdout, 'the live database has moved on');
  const check = await runScript('rebuild-projection', ['--check'], { db: target });
  assert.is(check.status, 0, `the restored projection matches its log: ${check.stderr}`);
});

/** The guides' PostgreSQL addresses (`postgres://ROLE@HOST/DB`, HOST or db.example) on this server, with each role's password. */
function guideAddresses(serverUrl: string): (text: string) => string {
  const server = new URL(serverUrl);
  const passwords: Record<string, string> = {
    postgres: server.password,
    inventory_owner: 'change-me-owner',
    inventory_service: 'change-me-service',
    inventory_auditor: 'change-me-auditor',
  };
  return (text) =>
    text.replace(/postgres:\/\/(\w+)@(?:HOST|db\.example)\/(\w+)/g, (_, role: string, db: string) => {
      assert.ok(passwords[role] !== undefined, `a role the guides do not create: ${role}`);
      return `postgres://${role}:${passwords[role]}@${server.host}/${db}`;
    });
}

needing(pgTest, [tools.pgDump, tools.pgRestore, tools.psql])(
  "the operators' guide's restore, as written, into a database made as the scaling guide makes it, with its roles",
  async ({ dir, databases }) => {
    // A server of its own: roles belong to the server, and this pg_dump may be older than the test run's.
    const server = await startPostgres('backup.test', { major: 15 });
    databases.push({ url: server.url, cleanup: () => server.stop() });
    const local = guideAddresses(server.url);
    symlinkSync(join(root, 'scripts'), dir.path('scripts'));
    const shell = (commands: string) =>
      spawnSync('bash', ['--noprofile', '--norc', '-e', '-c', local(commands)], { cwd: dir.dir, encoding: 'utf8', timeout: 120_000 });

    // docs/scaling.md: the database, the roles, migrate as the owner, the grants.
    const [create] = fencedBlocks('docs/scaling.md', 'sh').filter((b) => b.includes('CREATE DATABASE'));
    const made = shell(create!);
    assert.is(made.status, 0, made.stderr);
    const [roles, grants] = fencedBlocks('docs/scaling.md', 'sql');
    await runSql(local('postgres://postgres@HOST/inventory'), roles!);
    const owner = local('postgres://inventory_owner@HOST/inventory');
    const migrated = await runScript('migrate', [], { db: owner });
    assert.is(migrated.status, 0, migrated.stderr);
    await runSql(owner, grants!);
    for (const args of [['1', '--quantity', '5'], ['9007199254740993']]) {
      const tracked = await runScript('track', args, { db: owner });
      assert.is(tracked.status, 0, tracked.stderr);
    }
    const atDump = await runScript('verify-log', [], { db: owner });
    assert.is(atDump.status, 0, atDump.stderr);

    // docs/operators.md: dump, make the database, restore, verify.
    const [recipe] = fencedBlocks('docs/operators.md', 'sh').filter((b) => b.startsWith('pg_dump '));
    const restored = shell(recipe!);
    assert.is(restored.status, 0, `${restored.stdout}${restored.stderr}`);
    assert.is(restored.stdout.trim().split('\n').at(-1), atDump.stdout.trim(), 'the restored log has the digest of the dump');
    // The grants came back with the tables: the service's role reads and appends, the auditor verifies.
    await runSql(
      local('postgres://inventory_service@HOST/inventory_restored'),
      'SELECT count(*) FROM events; SELECT count(*) FROM inventory',
    );
    const audited = await runScript('verify-log', [], { db: local('postgres://inventory_auditor@HOST/inventory_restored') });
    assert.is(audited.status, 0, audited.stderr);
  },
);

pgTest.run();
