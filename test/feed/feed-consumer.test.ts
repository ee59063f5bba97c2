// The clients' guide's change feed consumer (docs/clients.md, "Following the log"), run
// as written against the service: it prints every event once, in seq order, checking
// the hash chain, also when it is stopped and started again while writes go on.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApp, type TestApp } from '../kit/app.ts';
import { readLines, type LineReader } from '../kit/lines.ts';
import { root, tempDir, type TempDir } from '../kit/paths.ts';

const BIG = 9223372036854775807n;

/** The consumer's code block: the ```ts block that names follow-log.ts on its first line. */
function consumerCode(): string {
  const guide = readFileSync(join(root, 'docs/clients.md'), 'utf8');
  const found = [...guide.matchAll(/\n```ts\n(\/\/ follow-log\.ts:[\s\S]*?)\n```/g)];
  assert.is(found.length, 1, 'one follow-log.ts block in docs/clients.md');
  return `${found[0]![1]!}\n`;
}

const s = suite<{ t: TestApp; scratch: TempDir }>("the clients' guide's feed consumer");
s.before.each(async (ctx) => {
  ctx.t = await startApp();
  // Inside the repository, so that tsx resolves from its node_modules; removed afterwards.
  mkdirSync(join(root, '.generated-client'), { recursive: true });
  ctx.scratch = tempDir('follow-', join(root, '.generated-client'));
  writeFileSync(ctx.scratch.path('follow-log.ts'), consumerCode());
});
s.after.each(async (ctx) => {
  await ctx.t.close();
  ctx.scratch.cleanup();
});

function start({ t, scratch }: { t: TestApp; scratch: TempDir }): LineReader {
  return readLines(
    spawn(process.execPath, ['--import', 'tsx', 'follow-log.ts'], {
      cwd: scratch.dir,
      env: { ...process.env, INVENTORY_URL: `http://127.0.0.1:${t.port}`, INVENTORY_KEY: t.key },
    }),
  );
}

const lineOf = (e: { seq: bigint; type: string; petId: bigint; data: string; actor: string }) =>
  `${e.seq} ${e.type} pet ${e.petId} ${e.data} by ${e.actor}`;

s('it prints every event once, in order, across a restart, and resumes where it stopped', async (ctx) => {
  const { t } = ctx;
  await t.track(7, 3);
  await t.track(BIG, 1);
  for (let i = 0; i < 5; i++) assert.is((await t.patch(7, { quantity: i })).status, 200);
  const first = start(ctx);
  await first.waitFor(7);
  for (let i = 0; i < 5; i++) assert.is((await t.patch(BIG, { quantity: 10 + i })).status, 200);
  await first.waitFor(12);
  first.proc.kill('SIGTERM');
  await first.exited;
  // Written while it is down: the next run starts after the last one it handled.
  for (let i = 0; i < 5; i++) assert.is((await t.patch(7, { quantity: 20 + i })).status, 200);
  const second = start(ctx);
  await second.waitFor(5);
  for (let i = 0; i < 3; i++) assert.is((await t.patch(7, { quantity: 30 + i })).status, 200);
  await second.waitFor(8);
  await new Promise((resolve) => setTimeout(resolve, 300));
  second.proc.kill('SIGTERM');
  await second.exited;
  const expected = (await t.events()).map(lineOf);
  assert.equal([...first.lines, ...second.lines], expected);
  assert.ok(
    expected.some((line) => line.includes(` pet ${BIG} `)),
    'int64 ids printed exactly',
  );
  const state = JSON.parse(readFileSync(ctx.scratch.path('follow-log.state.json'), 'utf8')) as { seq: string };
  assert.is(state.seq, String((await t.events()).at(-1)!.seq));
});

s('it stops with status 1 when its place is not in the log: another hash at its seq, or past the head', async (ctx) => {
  const { t } = ctx;
  await t.track(7, 3);
  await t.track(8, 1);
  const [first] = await t.events();
  for (const [state, code] of [
    [{ seq: String(first!.seq), hash: 'f'.repeat(64) }, 'cursor_not_in_log'],
    [{ seq: '5', hash: first!.hash! }, 'cursor_past_head'],
  ] as const) {
    writeFileSync(ctx.scratch.path('follow-log.state.json'), JSON.stringify(state));
    const run = start(ctx);
    assert.is(await run.exited, 1, run.err());
    assert.match(run.err(), code);
    assert.equal(run.lines, []);
  }
});

s.run();
