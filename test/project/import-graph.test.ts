// The layers of src/, as the import lines draw them: no module reaches itself through its
// imports (a circle), and the lower layers import nothing from the layers above them.
// From the bottom: support (the logger, the log's signing), the domain, the store, the
// feed, the application services, then the HTTP edge and the CLI; the entry points
// (server.ts, app.ts) at the top, which nothing imports. config.ts, the settings read
// from the environment, may be read by any layer.
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
  assert.ok(graph.get('app.ts')?.includes('http/feed-hub.ts'));
  assert.ok(graph.get('http/feed-hub.ts')?.includes('http/sse-stream.ts'));
  assert.ok(graph.get('http/feed-hub.ts')?.includes('feed/coordinator.ts'));
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

test.run();
