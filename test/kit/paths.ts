// Where the tests find the repository, and the one way they make scratch directories:
// each owns a fresh directory under the system's temp dir and removes it when done.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (the kit lives in test/kit/). */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The path of an operator command's wrapper script (scripts/<name>). */
export function scriptPath(name: string): string {
  return join(root, 'scripts', name);
}

export interface TempDir {
  dir: string;
  /** A path inside the directory. */
  path(name: string): string;
  /** Removes the directory and everything in it; safe to call twice. */
  cleanup(): void;
}

/** A fresh directory whose name starts with prefix (under tmpdir(), or under parent). */
export function tempDir(prefix = 'inv-test-', parent = tmpdir()): TempDir {
  const dir = mkdtempSync(join(parent, prefix));
  return {
    dir,
    path: (name) => join(dir, name),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
