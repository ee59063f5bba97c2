// The signer's memory of what its key published (`<key file>.signed`): a log that does
// not extend it, smaller or with another root at that size, is a fork the key must not
// sign; on both stores. The service's own refusal at start is shown by the backup drill.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { forkOf, makeSignedStateWriter, signedStatePath, writeSignedState } from '../../src/application/signing/signed-state.ts';
import { appSuite } from '../kit/suites.ts';
import { tempDir } from '../kit/paths.ts';
import { waitUntil } from '../kit/wait.ts';

const KEY = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
const state = appSuite('what a key published', { app: { signingKey: KEY, writer: 'thread' } });

/** The size and root of the checkpoint the service serves now. */
async function published(t: { get(path: string): Promise<{ text: string }> }) {
  const [, size, root] = (await t.get('/v1/log/checkpoint')).text.split('\n');
  return { size: Number(size), root: root! };
}

state('a log that extends what the key published passes; one smaller or with another root is refused', async ({ t }) => {
  const dir = tempDir('signed-state-');
  try {
    const path = signedStatePath(dir.path('key.pem'));
    assert.is(await forkOf(t.store, path), undefined, 'no file: nothing published yet');
    await t.track(1, 3);
    await t.patch(1, { quantity: 4 });
    const { logId } = JSON.parse((await t.get('/v1/log/head')).text) as { logId: string };
    const then = await published(t);
    writeSignedState(path, { [logId]: then });
    await t.patch(1, { quantity: 5 });
    assert.is(await forkOf(t.store, path), undefined, 'the log grew from it');
    writeSignedState(path, { [logId]: { size: then.size + 5, root: then.root } });
    assert.match(
      String(await forkOf(t.store, path)),
      /signed a tree of 7 events for log .*, which now holds 3: the log was restored or cut; .*endorse-signing/,
    );
    writeSignedState(path, { [logId]: { size: then.size, root: Buffer.alloc(32).toString('base64') } });
    assert.match(
      String(await forkOf(t.store, path)),
      /the log's tree of 2 events has root .*, not A{43}= as this key signed: the log was rewritten or restored/,
    );
    writeSignedState(path, { '00000000-0000-4000-8000-000000000000': { size: 99, root: then.root } });
    assert.is(await forkOf(t.store, path), undefined, 'another log is not this one');
  } finally {
    dir.cleanup();
  }
});

/** A state writer at path in a directory of its own, spacingMs apart, for run; the
 * writer reported no error when run ends. */
async function withWriter(spacingMs: number, run: (writer: ReturnType<typeof makeSignedStateWriter>, path: string) => Promise<void>) {
  const dir = tempDir('signed-state-');
  try {
    const path = dir.path('key.pem.signed');
    const errors: Error[] = [];
    await run(
      makeSignedStateWriter(path, (e) => errors.push(e), spacingMs),
      path,
    );
    assert.equal(errors, []);
  } finally {
    dir.cleanup();
  }
}

state('the writer keeps the largest tree per log, written whole', () =>
  withWriter(0, async (writer, path) => {
    const root = (b: number) => Buffer.alloc(32, b);
    writer.published('log-a', 3, root(1));
    writer.published('log-a', 5, root(2));
    writer.published('log-a', 4, root(3));
    writer.published('log-b', 1, root(4));
    await writer.flush();
    await new Promise((r) => setImmediate(r));
    await writer.flush();
    assert.equal(JSON.parse(readFileSync(path, 'utf8')), {
      logs: { 'log-a': { size: 5, root: root(2).toString('base64') }, 'log-b': { size: 1, root: root(4).toString('base64') } },
    });
  }),
);

/** The size the state at path records for log-a, 0 before it exists. */
const sizeIn = (path: string) =>
  existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { logs: Record<string, { size: number }> }).logs['log-a']!.size : 0;

// A minute apart: nothing this test waits for comes near it.
state('the writer spaces its writes: the first at once, then at most one per spacing, the last tree; flush writes at once', () =>
  withWriter(60_000, async (writer, path) => {
    writer.published('log-a', 3, Buffer.alloc(32, 1));
    await waitUntil(() => sizeIn(path) === 3, 'the first tree written');
    writer.published('log-a', 4, Buffer.alloc(32, 2));
    writer.published('log-a', 5, Buffer.alloc(32, 3));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.is(sizeIn(path), 3, 'the next write waits for its spacing');
    await writer.flush();
    assert.is(sizeIn(path), 5, 'flush wrote the newest tree at once');
  }),
);

state('a tree published within the spacing is written once the spacing has passed, without a flush', () =>
  withWriter(20, async (writer, path) => {
    writer.published('log-a', 1, Buffer.alloc(32, 1));
    writer.published('log-a', 2, Buffer.alloc(32, 2));
    await waitUntil(() => sizeIn(path) === 2, 'the pending tree written after the spacing');
  }),
);

state('the writer removes the copies that writes cut short left, once they are old, and nothing else', () => {
  const dir = tempDir('signed-state-');
  try {
    const path = dir.path('key.pem.signed');
    writeSignedState(path, { 'log-a': { size: 1, root: Buffer.alloc(32).toString('base64') } });
    const hourAgo = new Date(Date.now() - 3_600_000);
    // A process killed between writing its copy and renaming it leaves the copy behind.
    const abandoned = [`${path}.12345.tmp`, `${path}.tmp`];
    // A copy written just now may be another process's, about to be renamed.
    const fresh = `${path}.67890.tmp`;
    const others = [dir.path('key.pem'), dir.path('key.pem.tmp'), `${path}.x.tmp`, `${path}.12345.tmp.bak`, dir.path('other.signed.1.tmp')];
    for (const file of [...abandoned, ...others]) {
      writeFileSync(file, '{');
      utimesSync(file, hourAgo, hourAgo);
    }
    writeFileSync(fresh, '{');
    const errors: Error[] = [];
    makeSignedStateWriter(path, (e) => errors.push(e));
    for (const file of abandoned) assert.not.ok(existsSync(file), `${file} removed`);
    for (const file of [fresh, path, ...others]) assert.ok(existsSync(file), `${file} kept`);
    assert.equal(errors, []);
  } finally {
    dir.cleanup();
  }
});

state.run();
