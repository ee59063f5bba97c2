// The writer thread's entry when the service runs from its TypeScript source (the tests;
// the compiled service starts dist/worker.mjs instead, see worker-entry.ts). Under Node
// 20 a worker does not inherit `--import tsx` (tsx issue 354: the loader hooks are
// registered per thread), so it registers tsx's hooks itself before it loads the
// TypeScript module.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
