// Who may create a database or change its schema, and what everyone else does instead:
// the service's start and scripts/migrate create (owner-only) and upgrade; the other
// operator commands refuse a missing, older or newer schema and name the fix; the
// commands that read open read-only, take no write lock, and say the real reason when a
// file cannot be opened. The real wrapper scripts and the real service run as processes.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/store/sqlite/database.ts';
import { loadMigrations, migrate } from '../../src/store/sqlite/migrate.ts';
import { tempDir, type TempDir } from '../kit/paths.ts';
import { runScript, type ScriptResult as Result } from '../kit/scripts.ts';
import { killAll, spawnService, startService, WAIT_MS, withTimeout } from '../kit/service.ts';
import { needing, type Tool } from '../kit/tools.ts';

const LATEST = loadMigrations().at(-1)!.version;
/** The version before the latest (numbers may leave gaps: a migration of a branch not yet merged). */
const PREVIOUS = loadMigrations().at(-2)!.version;
const NOBODY = 65534;

/** Runs scripts/<name> as a process (as another user when uid is given). */
const script = (name: string, args: string[], options: { uid?: number } = {}): Promise<Result> => runScript(name, args, options);

/** The commands that only read, and those that write (each with arguments that would succeed). */
const READERS: [string, ...string[]][] = [['audit'], ['verify-log'], ['keys', 'list'], ['rebuild-projection', '--check']];
const WRITERS: [string, ...string[]][] = [['track', '1'], ['keys', 'create', 'alice'], ['set-status', '1', 'sold'], ['rebuild-projection']];

function runAll(commands: [string, ...string[]][], db: string, options: { uid?: number } = {}): Promise<Result[]> {
  return Promise.all(commands.map(([name, ...args]) => script(name, [...args, '--db', db], options)));
}

function expectFailure(r: Result, message: RegExp): void {
  const shown = `${r.what}: exit ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
  assert.is(r.status, 1, shown);
  assert.match(r.stderr, message, shown);
  assert.match(r.stderr, /^error: [^\n]+\n$/, `${shown}\n(one line, no stack)`);
  assert.is(r.stdout, '', shown);
}

function schemaVersions(path: string): number[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
  } finally {
    db.close();
  }
}

function mode(path: string): string {
  return (statSync(path).mode & 0o777).toString(8).padStart(4, '0');
}

/** A database made by this version. */
function current(path: string): void {
  openDatabase(path).close();
}

/** A database made by the version before the newest migration. */
function older(path: string): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  migrate(db, loadMigrations().slice(0, -1));
  db.close();
}

/** A database upgraded by a later version of the code than this one. */
function newer(path: string): void {
  const db = openDatabase(path);
  db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
    LATEST + 1,
    'later.sql',
    new Date().toISOString(),
  );
  db.close();
}

interface Ctx {
  scratch: TempDir;
  dir: string;
  db: string;
}

/** SQLite only: file modes, its migration files, its open errors. */
function schemaSuite(name: string) {
  const s = suite<Ctx>(`${name} (SQLite only)`);
  s.before.each((ctx) => {
    ctx.scratch = tempDir('inventory-schema-');
    ctx.dir = ctx.scratch.dir;
    ctx.db = ctx.scratch.path('inventory.db');
  });
  s.after.each(async (ctx) => {
    await killAll();
    ctx.scratch.cleanup();
  });
  // uvu skips after.each when a test fails: no service may outlive the suite.
  s.after(async () => {
    await killAll();
  });
  return s;
}

// ---------------------------------------------------------------------------------------
const creating = schemaSuite('scripts/migrate and the service create and upgrade, owner-only');

creating(
  'scripts/migrate creates a new database 0600 in new directories 0700, says what it applied; a rerun applies nothing',
  async (ctx) => {
    chmodSync(ctx.dir, 0o755);
    const path = join(ctx.dir, 'new', 'sub', 'inventory.db');
    const r = await script('migrate', ['--db', path]);
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^created ${path}\n`));
    for (const m of loadMigrations()) assert.ok(r.stdout.includes(`applied ${m.name}\n`), `${m.name} listed:\n${r.stdout}`);
    assert.ok(r.stdout.endsWith(`is at schema version ${LATEST}\n`), r.stdout);
    assert.equal(
      schemaVersions(path),
      loadMigrations().map((m) => m.version),
    );

    assert.is(mode(path), '0600', 'the database file');
    assert.is(mode(join(ctx.dir, 'new')), '0700', 'a directory it created');
    assert.is(mode(join(ctx.dir, 'new', 'sub')), '0700', 'a directory it created');
    assert.is(mode(ctx.dir), '0755', 'an existing directory is left as it was');
    // SQLite makes -wal and -shm as the first writer needs them, with the file's mode.
    const writer = new Database(path);
    writer.prepare('INSERT INTO service_health (id) VALUES (1)').run();
    assert.is(mode(`${path}-wal`), '0600', '-wal');
    assert.is(mode(`${path}-shm`), '0600', '-shm');
    writer.close();

    const again = await script('migrate', ['--db', path]);
    assert.is(again.status, 0, again.stderr);
    assert.is(again.stdout, `${path} is at schema version ${LATEST}; nothing to apply\n`);
  },
);

creating('scripts/migrate upgrades an older schema in place and names only what it applied', async (ctx) => {
  older(ctx.db);
  const r = await script('migrate', ['--db', ctx.db]);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout, `applied ${loadMigrations().at(-1)!.name}\n${ctx.db} is at schema version ${LATEST}\n`);
  assert.is(schemaVersions(ctx.db).at(-1), LATEST);
});

creating('a migration numbered below one applied already (a branch merged later) is applied; the numbers may leave gaps', async (ctx) => {
  // Written on one branch: every migration but one in the middle, one that no later
  // migration builds on (the readiness probe's table).
  const middle = loadMigrations().find((m) => m.name === '006-service-health.sql')!;
  const db = new Database(ctx.db);
  db.pragma('journal_mode = WAL');
  migrate(
    db,
    loadMigrations().filter((m) => m.version !== middle.version),
  );
  db.close();
  const r = await script('migrate', ['--db', ctx.db]);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout, `applied ${middle.name}\n${ctx.db} is at schema version ${LATEST}\n`);
  assert.equal(
    schemaVersions(ctx.db),
    loadMigrations().map((m) => m.version),
  );
});

creating('the service creates its database 0600 (-wal and -shm too) in a new directory 0700', async (ctx) => {
  const path = join(ctx.dir, 'data', 'inventory.db');
  const s = await startService({ db: path, expectKey: true });
  assert.is(mode(path), '0600', 'the database file');
  assert.is(mode(`${path}-wal`), '0600', '-wal');
  assert.is(mode(`${path}-shm`), '0600', '-shm');
  assert.is(mode(join(ctx.dir, 'data')), '0700', 'the directory');
  assert.is((await s.stop()).code, 0);
});

creating.run();

// ---------------------------------------------------------------------------------------
const refusing = schemaSuite('every other command refuses what it must not create or upgrade');

refusing('a database that does not exist: every operator command exits 1 naming scripts/migrate, and creates nothing', async (ctx) => {
  for (const r of await runAll([...READERS, ...WRITERS], ctx.db)) {
    expectFailure(r, /no database at .*scripts\/migrate/);
  }
  assert.not.ok(existsSync(ctx.db), 'no database was created');
  assert.not.ok(existsSync(`${ctx.db}-wal`), 'no -wal was created');
});

refusing('an older schema: every operator command exits 1 naming scripts/migrate, and upgrades nothing', async (ctx) => {
  older(ctx.db);
  const before = schemaVersions(ctx.db);
  for (const r of await runAll([...READERS, ...WRITERS], ctx.db)) {
    expectFailure(r, new RegExp(`schema version ${PREVIOUS}, older than this version needs \\(${LATEST}\\): run scripts/migrate`));
  }
  assert.equal(schemaVersions(ctx.db), before, 'the schema is as it was');
});

refusing('a newer schema: the service, scripts/migrate and every operator command refuse it and change nothing', async (ctx) => {
  newer(ctx.db);
  const before = readFileSync(ctx.db);
  const service = spawnService({ INVENTORY_DB: ctx.db });
  // The auditors' reads (audit, verify-log) go ahead and say why: anyone with the file
  // can add a row to schema_migrations.
  const auditing = (r: Result) => r.what.startsWith('audit ') || r.what.startsWith('verify-log ');
  const results = await runAll([...READERS, ...WRITERS, ['migrate']], ctx.db);
  for (const r of results.filter((r) => !auditing(r)))
    expectFailure(r, new RegExp(`schema version ${LATEST + 1}, newer than this version of petstore-inventory knows \\(${LATEST}\\)`));
  for (const r of results.filter(auditing)) {
    assert.is(r.status, 0, `${r.what}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^warning: .* lists schema version ${LATEST + 1} in schema_migrations`), r.what);
  }
  assert.is(results.filter(auditing).length, 2);
  const { code } = await withTimeout(service.exited, WAIT_MS, 'the service to refuse a newer schema');
  assert.is(code, 1, `the service: exit ${code}\n${service.err()}`);
  assert.match(service.err(), /newer than this version of petstore-inventory knows/);
  assert.not.match(service.out(), /"listening"/);
  assert.ok(readFileSync(ctx.db).equals(before), 'the file is unchanged');
  assert.equal(schemaVersions(ctx.db).at(-1), LATEST + 1);
});

refusing('the commands that read take no write lock: they answer while another connection holds it', async (ctx) => {
  current(ctx.db);
  const holder = new Database(ctx.db);
  holder.exec('BEGIN IMMEDIATE');
  try {
    const started = Date.now();
    const [writer, ...readers] = await runAll([['keys', 'create', 'alice'], ...READERS], ctx.db);
    for (const r of readers) assert.is(r.status, 0, `${r.what}: exit ${r.status}\n${r.stderr}`);
    // The lock is real: a command that writes waits it out (5 s) and fails.
    assert.is(writer!.status, 1, `${writer!.what} while the lock is held:\n${writer!.stderr}`);
    assert.match(writer!.stderr, /another process holds its lock/);
    assert.ok(Date.now() - started < 30_000);
  } finally {
    holder.exec('ROLLBACK');
    holder.close();
  }
});

refusing.run();

// ---------------------------------------------------------------------------------------
const causes = schemaSuite('a database that cannot be opened: the real cause, never a guess');

/** What openDatabase says in each of its three ways; the commands' plumbing is tested by running some. */
function openErrors(path: string): string[] {
  const messages: string[] = [];
  for (const options of [{ readonly: true }, { mustExist: true }, {}]) {
    try {
      openDatabase(path, options).close();
      messages.push(`${JSON.stringify(options)}: opened`);
    } catch (err) {
      messages.push((err as Error).message);
    }
  }
  return messages;
}

causes('a file that is not a database: every entry point says so and leaves it alone', async (ctx) => {
  const junk = 'not a database, just text that someone saved under this name by mistake\n'.repeat(3);
  writeFileSync(ctx.db, junk);
  for (const m of openErrors(ctx.db)) assert.is(m, `${ctx.db} is not a SQLite database: check --db or INVENTORY_DB`);
  const service = spawnService({ INVENTORY_DB: ctx.db });
  for (const r of await runAll([['audit'], ['track', '1'], ['migrate']], ctx.db)) {
    expectFailure(r, /is not a SQLite database/);
  }
  const { code } = await withTimeout(service.exited, WAIT_MS, 'the service to refuse the file');
  assert.is(code, 1);
  assert.match(service.err(), /is not a SQLite database/);
  assert.is(readFileSync(ctx.db, 'utf8'), junk, 'the file is unchanged');
});

/** Makes dir read-only for this process, even for root (whom file modes do not stop); undoes it after. */
function readOnlyDir(dir: string): (() => void) | string {
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o555);
    return () => chmodSync(dir, 0o755);
  }
  try {
    execFileSync('chattr', ['+i', dir], { stdio: 'pipe' });
  } catch (err) {
    return `chattr +i failed (${(err as Error).message.split('\n')[0]})`;
  }
  return () => execFileSync('chattr', ['-i', dir]);
}

/** A directory made read-only here (root needs chattr, which some filesystems refuse): tried once, on a scratch directory. */
const readOnlyDirectories: Tool = {
  name: 'a read-only directory',
  ci: false,
  missing() {
    const scratch = tempDir('inventory-read-only-');
    try {
      const undo = readOnlyDir(scratch.dir);
      if (typeof undo === 'string') return `a read-only directory cannot be made here: ${undo}`;
      undo();
      return undefined;
    } finally {
      scratch.cleanup();
    }
  },
};

needing(causes, [readOnlyDirectories])('a read-only directory: readers and writers name it, instead of a schema version', async (ctx) => {
  // Closed cleanly, so no -wal or -shm is left: SQLite must create them to open it.
  current(ctx.db);
  assert.not.ok(existsSync(`${ctx.db}-shm`));
  const undo = readOnlyDir(ctx.dir);
  if (typeof undo === 'string') return assert.unreachable(`the scratch directory could be made read-only, this one not: ${undo}`);
  try {
    const [reader, writer, upgrader] = openErrors(ctx.db);
    const creator = openErrors(join(ctx.dir, 'other.db'))[2];
    const cause = `its directory ${ctx.dir} is read-only for this user`;
    assert.ok(reader!.startsWith(`cannot open ${ctx.db}: ${cause}`), reader);
    assert.match(reader!, /ask for write access to the directory, or read a copy/);
    for (const m of [writer, upgrader]) assert.ok(m!.startsWith(`cannot open ${ctx.db}: ${cause}`), m);
    assert.ok(creator!.startsWith(`cannot create ${join(ctx.dir, 'other.db')}: ${cause}`), creator);
    for (const r of await runAll([['audit'], ['keys', 'list'], ['track', '1']], ctx.db)) {
      expectFailure(r, new RegExp(cause));
      assert.not.match(r.stderr, /schema version/, r.what);
    }
  } finally {
    undo();
  }
  assert.not.ok(existsSync(join(ctx.dir, 'other.db')));
  assert.equal(schemaVersions(ctx.db).at(-1), LATEST);
});

causes('a file this user may not read: the commands say so', async (ctx) => {
  current(ctx.db);
  const asRoot = process.getuid?.() === 0;
  // Root reads any file: the commands run as another user then; else the file's mode stops us.
  chmodSync(ctx.dir, 0o755);
  chmodSync(ctx.db, asRoot ? 0o600 : 0o000);
  for (const r of await runAll([['audit'], ['track', '1']], ctx.db, asRoot ? { uid: NOBODY } : {})) {
    expectFailure(r, new RegExp(`cannot read ${ctx.db}: this user has no permission to read it`));
    assert.not.match(r.stderr, /schema version/, r.what);
  }
});

causes.run();
