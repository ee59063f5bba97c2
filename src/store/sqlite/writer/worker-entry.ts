// Where the writer thread starts. Run from the TypeScript source (the tests, tsx), it is
// worker-boot.mjs, which registers tsx in the thread before loading worker.ts. The
// compiled service (scripts/build.mjs) replaces this module with one naming the compiled
// worker beside its bundle, so that no TypeScript loader runs in either thread.
export const WORKER_ENTRY = new URL('./worker-boot.mjs', import.meta.url);
