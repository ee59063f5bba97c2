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

/** The "Generated clients" section of the clients' guide. */
function generatedClientsSection(guide: string): string {
  const start = guide.indexOf('\n## Generated clients\n');
  if (start < 0) throw new Error('docs/clients.md has no "## Generated clients" section');
  const end = guide.indexOf('\n## ', start + 1);
  return guide.slice(start, end < 0 ? undefined : end);
}

/** The code blocks of the clients' guide's "Generated clients", keyed by the file named on their first line. */
export function readmeClientFiles(readme: string): Map<string, string> {
  const section = generatedClientsSection(readme);
  const files = new Map<string, string>();
  for (const [, code] of section.matchAll(/\n```ts\n([\s\S]*?)\n```/g)) {
    const name = /^\/\/ ([\w-]+\.ts):/.exec(code!)?.[1];
    if (!name) throw new Error(`a Clients code block does not name its file on its first line:\n${code}`);
    files.set(name, `${code}\n`);
  }
  return files;
}

/** The setup of the clients' guide's "Generated clients": its package.json and the commands a user runs. */
export function clientGuideSetup(guide: string): { packageJson: string; commands: string[] } {
  const section = generatedClientsSection(guide);
  const json = [...section.matchAll(/\n```json\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
  const sh = [...section.matchAll(/\n```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
  if (json.length !== 1 || sh.length !== 1) throw new Error('"Generated clients" needs one ```json (package.json) and one ```sh block');
  return { packageJson: `${json[0]}\n`, commands: sh[0]!.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')) };
}

/** The ```ts block of a guide whose first line names this file (`// NAME: …`). */
export function namedTsBlock(guide: string, name: string): string {
  const found = [...guide.matchAll(/\n```ts\n(\/\/ ([\w-]+\.ts):[\s\S]*?)\n```/g)].filter((m) => m[2] === name);
  if (found.length !== 1) throw new Error(`${found.length} \`\`\`ts blocks name ${name}; one expected`);
  return `${found[0]![1]!}\n`;
}

/** The commands of the ```sh block of a guide that runs this file. */
export function commandsRunning(guide: string, name: string): string[] {
  const found = [...guide.matchAll(/\n```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]!).filter((block) => block.includes(name));
  if (found.length !== 1) throw new Error(`${found.length} \`\`\`sh blocks run ${name}; one expected`);
  return found[0]!.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
}
