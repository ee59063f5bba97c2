// Module resolution hook: src/server.ts's import of the store opener gets this folder's
// open.ts instead; every other import (open.ts's own included) resolves as usual.
import { URL } from 'node:url';

const stopping = new URL('./open.ts', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === './store/open.ts' && context.parentURL?.endsWith('/src/server.ts')) {
    // Through the next resolvers, so that tsx marks it TypeScript as it does any other.
    return nextResolve(stopping, context);
  }
  return nextResolve(specifier, context);
}
