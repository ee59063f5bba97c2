// The OpenAPI document in src/openapi.json is the one description of the interface: it
// is served at /openapi.json, and the request schemas are compiled from it.
import { readFileSync } from 'node:fs';

const OPENAPI_PATH = new URL('./openapi.json', import.meta.url);

export interface OpenApiDocument {
  components: { schemas: Record<string, Record<string, unknown>> };
  [key: string]: unknown;
}

/** The document's text, as served, and the parsed form. Read once at start. */
export function loadOpenApi(): { text: string; doc: OpenApiDocument } {
  const text = readFileSync(OPENAPI_PATH, 'utf8');
  return { text, doc: JSON.parse(text) as OpenApiDocument };
}
