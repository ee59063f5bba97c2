// Compiles the service for `npm start` (its prestart) and the operator commands for
// scripts/command (on demand): src/server.ts, the SQLite writer thread's entry and each
// command in src/cli/, each bundled with esbuild (a runtime dependency: the build runs at
// start) into dist/ (git-ignored), so that they run as plain JavaScript with no
// TypeScript loader in any thread. Packages stay external: they load from node_modules as
// usual. Files the source finds relative to its own module (the OpenAPI document, the
// docs pages, the migrations) are still found in src/ and migrations/: in each source
// file, import.meta.url becomes that file's URL relative to its bundle. Each bundle is
// written to a temporary file and renamed, so that services and commands starting at once
// never load half a file; a bundle already as built is not written again. dist/.built
// marks when the last build started (scripts/command compares the source with it). Plain
// JavaScript, run by node alone.
//   node scripts/build.mjs
import { readFile, rename, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const WORKER_ENTRY = join(ROOT, 'src/store/sqlite/writer/worker-entry.ts');

/** The operator commands (scripts/<name>), each bundled as dist/cli/<name>.mjs. */
const COMMANDS = [
  'keys',
  'track',
  'set-status',
  'migrate',
  'rebuild-projection',
  'verify-log',
  'verify-receipt',
  'audit',
  'stock-at',
  'backup',
  'copy-store',
  'follow',
  'mirror',
];

/** In each source file, import.meta.url as where that file is, seen from the bundle in outDir. */
const sourceUrls = (outDir) => ({
  name: 'source-urls',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      if (args.path === WORKER_ENTRY) {
        // The compiled writer thread (dist/worker.mjs), seen from the bundle.
        const worker = JSON.stringify(relative(outDir, join(DIST, 'worker.mjs')).split('\\').join('/'));
        return { contents: `export const WORKER_ENTRY = new URL(${worker}, import.meta.url);\n`, loader: 'ts' };
      }
      const url = JSON.stringify(relative(outDir, args.path).split('\\').join('/'));
      return { contents: text.replaceAll('import.meta.url', `new URL(${url}, import.meta.url).href`), loader: 'ts' };
    });
  },
});

const entries = {
  'server.mjs': 'src/server.ts',
  'worker.mjs': 'src/store/sqlite/writer/worker.ts',
  ...Object.fromEntries(COMMANDS.map((name) => [`cli/${name}.mjs`, `src/cli/${name}.ts`])),
};
// Written first and renamed last: its time is when this build started, so that a source
// file changed while it ran is newer than the stamp and the next command builds again.
const stamp = join(DIST, '.built');
const startedStamp = `${stamp}.${process.pid}.tmp`;
await mkdir(join(DIST, 'cli'), { recursive: true });
await writeFile(startedStamp, '');
await Promise.all(
  Object.entries(entries).map(async ([name, entry]) => {
    const out = join(DIST, name);
    const result = await build({
      entryPoints: [join(ROOT, entry)],
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      logLevel: 'warning',
      plugins: [sourceUrls(dirname(out))],
    });
    // Already as built (a start before this one): left alone, so that a checkout the
    // service may read but not write starts once its owner has built it.
    const current = await readFile(out).catch(() => undefined);
    if (current?.equals(result.outputFiles[0].contents)) return;
    const temporary = `${out}.${process.pid}.tmp`;
    await writeFile(temporary, result.outputFiles[0].contents);
    await rename(temporary, out);
  }),
);
await rename(startedStamp, stamp);
