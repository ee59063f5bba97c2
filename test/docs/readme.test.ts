// The README's section "Quickstart", run as written, and then the curl examples of
// docs/clients.md, which continue from where it ends: the service on a fresh database
// (started the way `npm start` does, on a free port), then every ```sh block in order in
// one bash process (so KEY= carries over), each compared with the output block the
// README shows after it. The first output block, before any command, is what the
// service prints on standard error at its first start.
//
// Only two things are substituted in the commands: the port (8080 in the README) and the
// example key (the key this service printed). In the outputs, only what is random is
// masked, in both the README's text and what really came out:
// - the bootstrap key (it is random: the real one is shown as the README's example);
// - request ids the service generated (random UUIDs; a client's own id stays as is);
// - dates and times (ISO 8601, UTC), which depend on when the test runs;
// - the headers the README says it leaves out (Date, Connection, Keep-Alive,
//   Content-Length) are dropped from the real responses.
// Everything else, list ETags included (hashes of the list's content and versions),
// must match exactly: a README that shows stale output fails here.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
import { killAll, startService, WAIT_MS, withTimeout, type Service } from '../kit/service.ts';

const README_PORT = '8080';
const README_KEY = 'pinv_EXAMPLE-your-own-key-differs';
const OMITTED_HEADERS = /^(date|connection|keep-alive|content-length):/i;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g;
const RECEIPT = /hash="[0-9a-f]{64}", checkpoint=:[A-Za-z0-9+/]+={0,2}:, proof=\((?::[A-Za-z0-9+/]+={0,2}:(?: (?=:))?)*\)/g;

interface Block {
  lang: string;
  text: string;
}

/** The fenced blocks of one README section, in order. */
function sectionBlocks(readme: string, heading: string): Block[] {
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no section "## ${heading}"`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
}

/** What a reader compares by eye: random parts masked; blank lines around and trailing spaces dropped. */
function mask(text: string): string {
  return (
    text
      .replace(UUID, '<uuid>')
      .replace(TIME, '<time>')
      // A receipt's event hash depends on the time, its checkpoint on the key and the time.
      .replace(RECEIPT, 'hash="<hash>", checkpoint=:<checkpoint>:, proof=(<proof>)')
      .replace(/[ \t]+$/gm, '')
      .replace(/^\n+/, '')
      .trimEnd()
  );
}

function realOutput(text: string, s: Service): string {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  // Headers end at the first empty line of an HTTP response (curl -i); a body keeps every line.
  let inHeaders = /^HTTP\/\d/.test(lines[0] ?? '');
  const kept = lines.filter((line) => {
    if (inHeaders && line === '') inHeaders = false;
    return !(inHeaders && OMITTED_HEADERS.test(line));
  });
  return mask(kept.join('\n').replaceAll(s.bootstrapKey!, README_KEY).replaceAll(`127.0.0.1:${s.port}`, `127.0.0.1:${README_PORT}`));
}

/** One bash process that runs blocks in turn, in the repository root, and returns each one's output. */
function shell(env: Record<string, string>): { run(script: string): Promise<string>; close(): void } {
  // NO_COLOR alone: Node 24 warns on standard error when FORCE_COLOR is set beside it.
  const inherited = { ...process.env };
  delete inherited.FORCE_COLOR;
  const bash: ChildProcessWithoutNullStreams = spawn('bash', ['--noprofile', '--norc'], {
    cwd: root,
    env: { ...inherited, ...env, NO_COLOR: '1' },
  });
  let out = '';
  let waiting: (() => void) | undefined;
  bash.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    waiting?.();
  });
  bash.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    out += `[bash: ${chunk}]`;
    waiting?.();
  });
  return {
    async run(script) {
      const marker = `@@readme-block-done-${randomUUID()}@@`;
      out = '';
      // The block's standard error goes with its standard output, as on a terminal; its
      // standard input is not this pipe, so no command can swallow the next block.
      bash.stdin.write(`{\n${script}\n} </dev/null 2>&1\nprintf '\\n%s\\n' '${marker}'\n`);
      await withTimeout(
        new Promise<void>((resolve) => {
          waiting = () => {
            if (out.includes(`${marker}\n`)) resolve();
          };
          waiting();
        }),
        WAIT_MS * 2,
        `the README block:\n${script}\noutput so far:\n${out}`,
      );
      waiting = undefined;
      return out.slice(0, out.indexOf(marker));
    },
    close() {
      bash.stdin.end();
      bash.kill('SIGKILL');
    },
  };
}

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = sectionBlocks(readme, 'Quickstart');

const quickstart = suite<{ dir?: TempDir; service?: Service; sh?: ReturnType<typeof shell> }>('README quickstart, run as written', {});

quickstart.before(async (ctx) => {
  for (const tool of ['bash', 'curl']) {
    const r = spawnSync(tool, ['--version'], { encoding: 'utf8' });
    if (r.error || r.status !== 0) throw new Error(`the README test needs ${tool} on PATH`);
  }
  ctx.dir = tempDir('inventory-readme-');
  const db = ctx.dir.path('inventory.db');
  ctx.service = await startService({ db: db, expectKey: true });
  ctx.sh = shell({ INVENTORY_DB: db });
});

quickstart.after(async (ctx) => {
  ctx.sh?.close();
  if (ctx.service) await ctx.service.stop();
  await killAll();
  ctx.dir?.cleanup();
});

quickstart('the section has its first-start message, then commands each followed by their output', () => {
  assert.ok(blocks.length >= 3, 'at least the first-start message and one command with its output');
  assert.is(blocks[0]!.lang, '', 'the first block is the message the service prints');
  for (let i = 1; i < blocks.length; i += 2) {
    assert.is(blocks[i]!.lang, 'sh', `block ${i + 1} is a command block (\`\`\`sh)`);
    assert.is(blocks[i + 1]?.lang, '', `the command block ${i + 1} is followed by its output block`);
  }
});

quickstart('the first start prints the bootstrap message the README shows', (ctx) => {
  // The README's service runs on the default database; this one on a file of its own, which
  // the message names with --db.
  const printed = ctx.service!.err().replaceAll(` --db ${ctx.dir!.path('inventory.db')}`, '');
  assert.fixture(realOutput(printed, ctx.service!), mask(blocks[0]!.text));
});

// The clients' guide's curl examples continue the quickstart's state (pet 1 at version 2):
// each ```sh block there and the output block after it.
const clients = [...readFileSync(join(root, 'docs/clients.md'), 'utf8').matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
  lang: m[1]!,
  text: m[2]!,
}));
const continued = clients.flatMap((b, i) => (b.lang === 'sh' && clients[i + 1]?.lang === '' ? [b, clients[i + 1]!] : []));

// One test per command block, in order: each depends on those before it.
const steps = [...blocks.slice(1), ...continued];
for (let i = 0; i + 1 < steps.length; i += 2) {
  const command = steps[i]!.text;
  const expected = steps[i + 1]!.text;
  quickstart(`$ ${command.split('\n')[0]}`, async (ctx) => {
    const s = ctx.service!;
    const script = command.replaceAll(README_KEY, s.bootstrapKey!).replaceAll(`127.0.0.1:${README_PORT}`, `127.0.0.1:${s.port}`);
    const out = await ctx.sh!.run(script);
    assert.fixture(realOutput(out, s), mask(expected));
  });
}

quickstart.run();
