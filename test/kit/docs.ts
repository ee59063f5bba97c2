// The documentation's examples, read from the pages themselves so that a test runs what
// a reader copies.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './paths.ts';

/** The parts of the Grafana dashboard JSON the tests read. */
export interface Dashboard {
  panels: { title: string; targets: { expr: string }[] }[];
}

/** The fenced blocks of a page with this info string, in order. */
export function fencedBlocks(page: string, lang: string): string[] {
  const text = readFileSync(join(root, page), 'utf8');
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === lang).map((m) => m[2]!);
}

/** Every PromQL expression of the operators' guide: in ```promql blocks, one per
 * paragraph, after the `#` lines that say what it answers. */
export function docsPromql(): string[] {
  return fencedBlocks('docs/operators.md', 'promql').flatMap((block) =>
    block
      .split(/\n\s*\n/)
      .map((part) =>
        part
          .split('\n')
          .filter((line) => !line.startsWith('#'))
          .join(' ')
          .trim(),
      )
      .filter((expr) => expr !== ''),
  );
}
