// The service as `npm start` runs it: dist/server.mjs, built from src/ by scripts/build.mjs
// when a bundle is missing or a file in src/ (or the build itself) is newer than the last
// build, the rule scripts/command follows for the operator commands. Starting the bundle
// needs no TypeScript loader in the service or its writer thread, so the many services
// the suite starts cost what a user's does. A test file checks once, at its first start:
// the source does not change during a run. Files starting at once may both build; each
// bundle is written whole and renamed into place, so none starts half a file.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './paths.ts';

const DIST = join(root, 'dist');
const STAMP = join(DIST, '.built');

/** The newest modification under dir, directories included (a file added or removed). */
function newestUnder(dir: string): number {
  let newest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function stale(bundle: string): boolean {
  if (!existsSync(bundle) || !existsSync(STAMP)) return true;
  const built = statSync(STAMP).mtimeMs;
  return Math.max(newestUnder(join(root, 'src')), statSync(join(root, 'scripts/build.mjs')).mtimeMs) > built;
}

let checked: string | undefined;

/** The path of the service's bundle, built first if the source is newer. */
export function serverBundle(): string {
  if (checked !== undefined) return checked;
  const bundle = join(DIST, 'server.mjs');
  if (stale(bundle)) {
    const build = spawnSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    if (build.status !== 0) throw new Error(`scripts/build.mjs failed (${build.status ?? build.signal}): ${build.stderr}${build.stdout}`);
  }
  checked = bundle;
  return bundle;
}
