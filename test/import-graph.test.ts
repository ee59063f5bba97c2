// The layers of src/, as the import lines draw them: no module reaches itself through its
// imports (a circle), and the lower layers (the domain, the store, the feed) import
// nothing from the layers above them (the HTTP edge, the CLI, the feed for the store).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from './kit/paths.ts';

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

test('the graph is read: the app imports the feed hub, the hub its stream', () => {
  const graph = importGraph();
  assert.ok(graph.get('app.ts')?.includes('feed/hub.ts'));
  assert.ok(graph.get('feed/hub.ts')?.includes('feed/stream.ts'));
});

test('no module of src/ imports itself through others', () => {
  assert.equal(
    circles(importGraph()).map((c) => c.join(' -> ')),
    [],
  );
});

test('the domain, the store and the feed import nothing from the layers above them', () => {
  const above: Record<string, string[]> = {
    'domain/': ['http/', 'cli/', 'feed/', 'store/'],
    'store/': ['http/', 'cli/', 'feed/'],
    'feed/': ['http/', 'cli/'],
  };
  const upward: string[] = [];
  for (const [from, targets] of importGraph()) {
    for (const [layer, higher] of Object.entries(above)) {
      if (!from.startsWith(layer)) continue;
      for (const to of targets) if (higher.some((h) => to.startsWith(h))) upward.push(`${from} -> ${to}`);
    }
  }
  assert.equal(upward, []);
});

test.run();
