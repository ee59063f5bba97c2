// Compiles the service for `npm start` (its prestart): src/server.ts and the SQLite
// writer thread's entry, each bundled with esbuild (which tsx, a dependency, brings) into
// dist/ (git-ignored), so that the service runs as plain JavaScript with no TypeScript
// loader in either thread. Packages stay external: they load from node_modules as usual.
// Files the source finds relative to its own module (the OpenAPI document, the docs
// pages, the migrations) are still found in src/ and migrations/: in each source file,
// import.meta.url becomes that file's URL relative to the bundle. Each bundle is written
// to a temporary file and renamed, so that services starting at once never load half a
// file; a bundle already as built is not written again. Plain JavaScript, run by node
// alone. About a tenth of a second.
//   node scripts/build.mjs
import { readFile, rename, mkdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const WORKER_ENTRY = join(ROOT, 'src/store/sqlite/worker-entry.ts');

/** In each source file, import.meta.url as where that file is, seen from dist/. */
const sourceUrls = {
  name: 'source-urls',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.ts$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      if (args.path === WORKER_ENTRY) {
        // The compiled writer thread, beside the bundle (dist/worker.mjs).
        return { contents: "export const WORKER_ENTRY = new URL('./worker.mjs', import.meta.url);\n", loader: 'ts' };
      }
      const url = JSON.stringify(relative(DIST, args.path).split('\\').join('/'));
      return { contents: text.replaceAll('import.meta.url', `new URL(${url}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

const entries = { server: 'src/server.ts', worker: 'src/store/sqlite/worker.ts' };
await Promise.all(
  Object.entries(entries).map(async ([name, entry]) => {
    const result = await build({
      entryPoints: [join(ROOT, entry)],
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      logLevel: 'warning',
      plugins: [sourceUrls],
    });
    const out = join(DIST, `${name}.mjs`);
    // Already as built (a start before this one): left alone, so that a checkout the
    // service may read but not write starts once its owner has built it.
    const current = await readFile(out).catch(() => undefined);
    if (current?.equals(result.outputFiles[0].contents)) return;
    const temporary = `${out}.${process.pid}.tmp`;
    await mkdir(DIST, { recursive: true });
    await writeFile(temporary, result.outputFiles[0].contents);
    await rename(temporary, out);
  }),
);
