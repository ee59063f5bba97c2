// The layers of src/, as the import lines draw them: no module reaches itself through its
// imports (a circle), and the lower layers import nothing from the layers above them.
// From the bottom: support (the logger, the log's signing), the domain, the store, the
// feed, the application services, then the HTTP edge and the CLI; the entry points
// (server.ts, app.ts) at the top, which nothing imports. config.ts, the settings read
// from the environment, may be read by any layer. Within the layers, each room (a folder:
// application/write, http/stages, store/sqlite, …) names the rooms it may import from.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from '../kit/paths.ts';

const SRC = join(root, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Each module of src/ (relative to it) and the modules of src/ it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+\.ts)'/g)].map((m) =>
      relative(SRC, resolve(dirname(file), m[1]!)),
    );
    graph.set(relative(SRC, file), [...new Set(targets)]);
  }
  return graph;
}

/** Every circle of imports, as the path that closes it. */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

test('the graph is read: the app imports the feed hub, the hub its stream and the coordinator', () => {
  const graph = importGraph();
  assert.ok(graph.get('app.ts')?.includes('http/routes/feed-hub.ts'));
  assert.ok(graph.get('http/routes/feed-hub.ts')?.includes('http/routes/sse-stream.ts'));
  assert.ok(graph.get('http/routes/feed-hub.ts')?.includes('feed/coordinator.ts'));
});

test('the feed knows nothing of HTTP: nothing under src/feed imports node:http or koa', () => {
  const http: string[] = [];
  for (const file of sources(join(SRC, 'feed'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'((?:node:)?https?|koa|@koa\/[^']+|koa-[^']+)'/g))
      http.push(`${relative(SRC, file)} -> ${m[1]}`);
  }
  assert.equal(http, []);
});

test('no module of src/ imports itself through others', () => {
  assert.equal(
    circles(importGraph()).map((c) => c.join(' -> ')),
    [],
  );
});

test('each layer imports nothing from the layers above it', () => {
  // Each layer and the layers above it; the entry points are above every one of them.
  const layers: Record<string, string[]> = {
    'support/': ['json/', 'domain/', 'store/', 'feed/', 'application/', 'http/', 'cli/'],
    'json/': ['domain/', 'store/', 'feed/', 'application/', 'http/', 'cli/'],
    'domain/': ['store/', 'feed/', 'application/', 'http/', 'cli/'],
    'store/': ['feed/', 'application/', 'http/', 'cli/'],
    'feed/': ['application/', 'http/', 'cli/'],
    'application/': ['http/', 'cli/'],
    'http/': [],
    'cli/': [],
  };
  const above = Object.fromEntries(Object.entries(layers).map(([layer, higher]) => [layer, [...higher, 'server.ts', 'app.ts']]));
  const upward: string[] = [];
  for (const [from, targets] of importGraph()) {
    for (const [layer, higher] of Object.entries(above)) {
      if (!from.startsWith(layer)) continue;
      for (const to of targets) if (higher.some((h) => to.startsWith(h))) upward.push(`${from} -> ${to}`);
    }
  }
  assert.equal(upward, []);
});

test('the edge reaches the store only through the application', () => {
  const direct: string[] = [];
  for (const [from, targets] of importGraph()) {
    if (!from.startsWith('http/')) continue;
    for (const to of targets) if (to.startsWith('store/')) direct.push(`${from} -> ${to}`);
  }
  assert.equal(direct, []);
});

/** The room of a module: its folder under src/, with application/, http/ and store/ by their rooms. */
function roomOf(module: string): string {
  const parts = module.split('/');
  if (parts.length === 1) return module;
  if (['application', 'http', 'store'].includes(parts[0]!) && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0]!;
}

test('each room imports only from the rooms written down as its neighbours', () => {
  // Below every room: support (the logger, the log's signing, output formats) and json.
  const base = ['support', 'json', 'config.ts'];
  const neighbours: Record<string, string[]> = {
    domain: [],
    store: ['domain', 'store/plan', 'store/receipts', 'store/sqlite', 'store/postgres'],
    'store/plan': ['domain', 'store', 'store/receipts'],
    'store/receipts': ['store'],
    'store/sqlite': ['domain', 'store', 'store/plan', 'store/receipts'],
    'store/postgres': ['domain', 'store', 'store/plan', 'store/receipts'],
    feed: ['store'],
    // The write path: commands decided and appended, their retries and idempotency.
    'application/write': ['domain', 'store'],
    // What the routes read: entries, the list, the log's head and keys, stock history.
    'application/read': ['domain', 'feed', 'store'],
    'application/signing': ['store'],
    'application/access': ['application/write', 'store'],
    'application/health': ['application/write', 'store'],
    // Verification is the commands' alone (verify-log, verify-receipt, the monitor).
    'application/verify': ['application/mirror', 'application/signing', 'application/write', 'domain', 'store'],
    // A verified copy (scripts/mirror) and what the tools read a copy with.
    'application/mirror': ['application/signing', 'application/verify', 'store'],
    'http/input': ['domain', 'feed', 'http/stages', 'openapi.ts'],
    'http/stages': ['application/access', 'application/health', 'application/signing', 'application/write', 'domain', 'feed', 'http/input'],
    'http/routes': [
      'application/health',
      'application/read',
      'application/signing',
      'application/write',
      'domain',
      'feed',
      'http/input',
      'http/stages',
      'openapi.ts',
    ],
    'http/server': ['http/stages'],
    cli: [
      'application/mirror',
      'application/read',
      'application/signing',
      'application/verify',
      'application/write',
      'domain',
      'feed',
      'store',
    ],
  };
  const strangers: string[] = [];
  for (const [from, targets] of importGraph()) {
    const room = roomOf(from);
    const allowed = neighbours[room];
    if (allowed === undefined) continue;
    for (const to of targets) {
      const other = roomOf(to);
      if (other !== room && !allowed.includes(other) && !base.includes(other)) strangers.push(`${from} -> ${to}`);
    }
  }
  assert.equal(strangers, []);
});

test('no folder under src/ holds more than 20 source files of its own', () => {
  const crowded: string[] = [];
  const visit = (dir: string) => {
    const entries = readdirSync(dir, { withFileTypes: true });
    const own = entries.filter((e) => e.isFile() && /\.(ts|mjs|js)$/.test(e.name)).length;
    if (own > 20) crowded.push(`${relative(SRC, dir) || 'src'}: ${own}`);
    for (const e of entries) if (e.isDirectory()) visit(join(dir, e.name));
  };
  visit(SRC);
  assert.equal(crowded, []);
});

test.run();
