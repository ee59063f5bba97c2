// The crash tests' service: src/server.ts as it is, except that the store it opens stops
// the process after its first commit of a stored answer (see open.ts here). Loaded with
// --import before src/server.ts (plain JavaScript: the writer thread loads it too, before
// any TypeScript loader); the production code has no switch for it.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
