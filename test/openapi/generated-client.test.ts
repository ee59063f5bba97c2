// A client generated from the SERVED /openapi.json (openapi-typescript types, openapi-fetch
// requests) keeps pet ids above 2^53 exact. The client code is the clients' guide's
// code, taken from that page itself so that the two cannot drift: it is type-checked
// with tsc against freshly generated types and driven against a running service.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApp, type TestApp } from '../kit/app.ts';
import { readmeClientFiles } from '../kit/docs.ts';
import { root, tempDir, type TempDir } from '../kit/paths.ts';
const BELOW = 9007199254740992n; // 2^53: the last id a double holds exactly, and its neighbour
const ABOVE = 9007199254740993n;

interface Answer {
  kind: 'ok' | 'not-modified' | 'error';
  status: number;
  etag: string | null;
  replayed?: boolean;
  value?: unknown;
  error?: { code: string; message: string; status: number };
}
interface Item {
  petId: bigint;
  quantity: number;
  status: string;
}
interface ClientModule {
  inventoryClient(
    baseUrl: string,
    apiKey: string,
  ): {
    list(ifNoneMatch?: string): Promise<Answer>;
    get(petId: bigint, ifNoneMatch?: string): Promise<Answer>;
    setQuantity(petId: bigint, quantity: number, ifMatch?: string, idempotencyKey?: string): Promise<Answer>;
  };
}
interface FeedEvent {
  seq: bigint;
  petId: bigint;
  type: string;
  hash: string;
}
interface FeedModule {
  seqsAfter(baseUrl: string, apiKey: string, after: string): Promise<{ seqs: bigint[]; next: bigint[]; events: FeedEvent[] }>;
}
interface TypesModule {
  generateTypes(documentUrl: string, outFile: string): Promise<void>;
}

const run = promisify(execFile);
const s = suite<{ t: TestApp; scratch: TempDir; dir: string; client: ClientModule; base: string }>('a client generated from /openapi.json');

s.before(async (ctx) => {
  ctx.t = await startApp();
  for (const [id, quantity] of [
    [7n, 3],
    [BELOW, 1],
    [ABOVE, 2],
  ] as const)
    await ctx.t.track(id, quantity);
  ctx.base = `http://127.0.0.1:${ctx.t.port}/v1`;

  // Inside the repository, so that the files resolve openapi-fetch and lossless-json from
  // its node_modules; git-ignored, and removed afterwards.
  mkdirSync(join(root, '.generated-client'), { recursive: true });
  ctx.scratch = tempDir('run-', join(root, '.generated-client'));
  ctx.dir = ctx.scratch.dir;
  const files = readmeClientFiles(readFileSync(join(root, 'docs/clients.md'), 'utf8'));
  assert.equal([...files.keys()].sort(), ['generate-types.ts', 'inventory-client.ts', 'usage.ts']);
  for (const [name, code] of files) writeFileSync(join(ctx.dir, name), code);
  // A file of this test's own: the generated types must refuse a number as petId, the
  // type that rounds ids above 2^53 (tsc fails on an @ts-expect-error with no error).
  writeFileSync(
    join(ctx.dir, 'int64-types.ts'),
    [
      "import type { components, paths } from './inventory-api.ts';",
      "type Item = components['schemas']['InventoryItem'];",
      "type PathId = paths['/inventory/{petId}']['patch']['parameters']['path']['petId'];",
      'export const id: PathId = 9007199254740993n;',
      'export const item: Item = { petId: 9007199254740993n, quantity: 1, status: "available" };',
      '// @ts-expect-error: a number is not an int64 id',
      'export const rounded: PathId = 9007199254740993;',
      '// @ts-expect-error: nor in a response',
      'export const roundedItem: Item = { petId: 1, quantity: 1, status: "available" };',
      "type FeedEvent = components['schemas']['FeedEvent'];",
      '// @ts-expect-error: a seq is exact, never a number',
      'export const roundedSeq: FeedEvent["seq"] = 1;',
      '',
    ].join('\n'),
  );
  // A page of the feed, through the guide's client and through openapi-fetch with the
  // guide's setting: FeedEvent[] (map compiles), seq a bigint (seq + 1n compiles).
  writeFileSync(
    join(ctx.dir, 'feed-page.ts'),
    [
      "import createClient from 'openapi-fetch';",
      "import type { paths } from './inventory-api.ts';",
      "import { inventoryClient } from './inventory-client.ts';",
      'export async function seqsAfter(baseUrl: string, apiKey: string, after: string) {',
      '  const page = await inventoryClient(baseUrl, apiKey).events(after, 1000);',
      "  if (page.kind !== 'ok') throw new Error(`events: ${page.status}`);",
      "  const api = createClient<paths, 'application/json'>({ baseUrl });",
      "  const typed = async () => (await api.GET('/events')).data?.map((e) => e.seq + 1n);",
      '  void typed;',
      '  return { seqs: page.value.map((e) => e.seq), next: page.value.map((e) => e.seq + 1n), events: page.value };',
      '}',
      '',
    ].join('\n'),
  );

  // The document as the service serves it, not the file in the repository.
  const served = await fetch(`http://127.0.0.1:${ctx.t.port}/openapi.json`);
  assert.is(served.status, 200);
  const types = (await import(pathToFileURL(join(ctx.dir, 'generate-types.ts')).href)) as TypesModule;
  await types.generateTypes(`http://127.0.0.1:${ctx.t.port}/openapi.json`, join(ctx.dir, 'inventory-api.ts'));

  writeFileSync(join(ctx.dir, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.json', include: ['*.ts'] }));
  try {
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(ctx.dir, 'tsconfig.json')], {
      cwd: ctx.dir,
      timeout: 120_000,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc refused the clients' guide's code:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
  ctx.client = (await import(pathToFileURL(join(ctx.dir, 'inventory-client.ts')).href)) as ClientModule;
});

s.after(async (ctx) => {
  ctx.scratch?.cleanup();
  await ctx.t?.close();
});

s('list: every entry, ids above 2^53 exact as bigint', async ({ client, base, t }) => {
  const listed = await client.inventoryClient(base, t.key).list();
  assert.is(listed.kind, 'ok');
  assert.equal(listed.value, [
    { petId: 7n, quantity: 3, status: 'available' },
    { petId: BELOW, quantity: 1, status: 'available' },
    { petId: ABOVE, quantity: 2, status: 'available' },
  ]);
  assert.ok(listed.etag);
});

s('update: the PATCH of ...993 changes ...993 only, and reads it back exactly', async ({ client, base, t }) => {
  const inventory = client.inventoryClient(base, t.key);
  const updated = await inventory.setQuantity(ABOVE, 42);
  assert.is(updated.kind, 'ok');
  assert.equal(updated.value, { petId: ABOVE, quantity: 42, status: 'available' } satisfies Item);
  assert.is(updated.etag, '"2"');
  const after = await inventory.list();
  assert.equal(
    (after.value as Item[]).map((i) => [i.petId, i.quantity]),
    [
      [7n, 3],
      [BELOW, 1],
      [ABOVE, 42],
    ],
  );
  const written = (await t.events()).filter((e) => e.type === 'QuantitySet');
  assert.equal(
    written.map((e) => e.petId),
    [ABOVE],
  );
});

s('read one entry: ...993 exact; its ETag makes an If-Match update succeed; 304; 404', async ({ client, base, t }) => {
  const inventory = client.inventoryClient(base, t.key);
  const above = await inventory.get(ABOVE);
  assert.is(above.kind, 'ok');
  assert.is((above.value as Item).petId, ABOVE);
  const read = await inventory.get(7n);
  assert.equal([read.kind, read.value, read.etag], ['ok', { petId: 7n, quantity: 3, status: 'available' }, '"1"']);
  const updated = await inventory.setQuantity(7n, 4, read.etag!);
  assert.equal([updated.kind, updated.etag], ['ok', '"2"']);
  const again = await inventory.get(7n, '"2"');
  assert.equal([again.status, again.kind], [304, 'not-modified']);
  const missing = await inventory.get(123n);
  assert.equal([missing.status, missing.error?.code], [404, 'pet_not_found']);
});

// fetch adds Cache-Control: no-cache to a request with If-None-Match; the service must
// still answer 304 (its ETag is a validator, not a cache directive).
s('304: If-None-Match with the current ETag, sent through fetch', async ({ client, base, t }) => {
  const inventory = client.inventoryClient(base, t.key);
  const first = await inventory.list();
  const again = await inventory.list(first.etag!);
  assert.is(again.status, 304, 'a conditional GET through fetch is answered 304');
  assert.is(again.kind, 'not-modified');
  assert.is(again.etag, first.etag);
});

s('404: a pet that is not tracked', async ({ client, base, t }) => {
  const missing = await client.inventoryClient(base, t.key).setQuantity(123n, 1);
  assert.is(missing.kind, 'error');
  assert.equal([missing.status, missing.error?.code, missing.error?.status], [404, 'pet_not_found', 404]);
});

s('412: If-Match with an old version; the current one in ETag, nothing written', async ({ client, base, t }) => {
  const before = (await t.events()).length;
  const stale = await client.inventoryClient(base, t.key).setQuantity(BELOW, 9, '"0"');
  assert.is(stale.kind, 'error');
  assert.equal([stale.status, stale.error?.code], [412, 'precondition_failed']);
  assert.is(stale.etag, '"1"');
  assert.is((await t.events()).length, before);
});

s('a retry with the same Idempotency-Key gets the stored answer and writes nothing', async ({ client, base, t }) => {
  const inventory = client.inventoryClient(base, t.key);
  const before = (await t.events()).length;
  const first = await inventory.setQuantity(7n, 11, undefined, 'generated-client-1');
  assert.is(first.kind, 'ok');
  assert.is(first.replayed, false);
  const retry = await inventory.setQuantity(7n, 11, undefined, 'generated-client-1');
  assert.equal([retry.kind, retry.replayed, retry.etag, retry.value], ['ok', true, first.etag, first.value]);
  const reused = await inventory.setQuantity(7n, 12, undefined, 'generated-client-1');
  assert.equal([reused.status, reused.error?.code], [422, 'idempotency_key_reused']);
  assert.is((await t.events()).length, before + 1);
});

s('a page of the change feed: FeedEvent[] with seq and petId exact as bigint; a digest cursor', async ({ dir, base, t }) => {
  const feed = (await import(pathToFileURL(join(dir, 'feed-page.ts')).href)) as FeedModule;
  const table = await t.events();
  const page = await feed.seqsAfter(base, t.key, '0');
  assert.equal(
    page.seqs,
    table.map((e) => e.seq),
  );
  assert.equal(
    page.next,
    table.map((e) => e.seq + 1n),
  );
  assert.equal(
    page.events.map((e) => e.petId),
    table.map((e) => e.petId),
  );
  assert.ok(
    page.events.some((e) => e.petId === ABOVE),
    'an id above 2^53, exact',
  );
  const at = table[1]!;
  const rest = await feed.seqsAfter(base, t.key, `${at.seq}:${at.hash}`);
  assert.equal(
    rest.seqs,
    table.slice(2).map((e) => e.seq),
  );
});

s('401: a key that is not valid', async ({ client, base }) => {
  const refused = await client.inventoryClient(base, 'pinv_0000000000000000000000000000000').list();
  assert.is(refused.kind, 'error');
  assert.equal([refused.status, refused.error?.code], [401, 'unauthorized']);
});

s.run();
