// The auditors' guide's programs (Go, Python), taken from the page as they are: a block
// by its heading, a Go block built with Debian's x/mod, and a run whose output is kept.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { blocks, pageText } from './auditors-guide.ts';
import type { TempDir } from './paths.ts';
import { GO_PATH } from './tools.ts';

export interface Ran {
  status: number | null;
  output: string;
}

/** Runs a program (not spawnSync: the server answering it may run in this process). */
export function run(file: string, args: string[], env: Record<string, string> = {}, cwd?: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output }));
  });
}

/** The one block of lang under heading. */
export function guideBlock(heading: string, lang: string): string {
  const found = blocks(pageText()).filter((b) => b.heading === heading && b.lang === lang);
  assert.is(found.length, 1, `one ${lang} block under "${heading}"`);
  return found[0]!.text;
}

/** Builds the Go block under heading in dir as name; returns the program's path. */
export async function buildGo(dir: TempDir, heading: string, name: string): Promise<string> {
  writeFileSync(dir.path(`${name}.go`), guideBlock(heading, 'go'));
  const env = { GOPATH: GO_PATH, GO111MODULE: 'off', GOCACHE: dir.path('go-cache'), GOFLAGS: '' };
  const built = await run('go', ['build', '-o', name, `${name}.go`], env, dir.dir);
  assert.is(built.status, 0, built.output);
  return dir.path(name);
}
