// GET /docs: the OpenAPI document as an interactive page (Swagger UI), with every asset
// served from here, out of the swagger-ui-dist package: nothing from a CDN, so the page
// works where the service's users can reach only the service. Only the files listed
// below are served (no path is ever joined with a file name a client sent).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { judgeRead, readConditions } from './preconditions.ts';
import type { Route } from './router.ts';

const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const HERE = join(dirname(new URL(import.meta.url).pathname), 'docs');

interface Asset {
  file: string;
  type: string;
}

const ASSETS: Record<string, Asset> = {
  '/docs': { file: join(HERE, 'index.html'), type: 'text/html; charset=utf-8' },
  '/docs/init.js': { file: join(HERE, 'init.js'), type: 'text/javascript; charset=utf-8' },
  '/docs/swagger-ui.css': { file: join(SWAGGER_UI, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
  '/docs/swagger-ui-bundle.js': { file: join(SWAGGER_UI, 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
};

// Scripts only from here; Swagger UI sets inline styles and draws icons as data: images.
// "Try it out" and the document are fetched from this origin only.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function docsRoutes(): Route[] {
  // Read on first use, then kept: the bundle is about 1.5 MB and the page rarely asked for.
  const loaded = new Map<string, { body: Buffer; etag: string }>();
  return Object.entries(ASSETS).map(([path, asset]): Route => ({
    method: 'GET',
    template: path,
    handler: (ctx) => {
      let file = loaded.get(path);
      if (!file) {
        const body = readFileSync(asset.file);
        file = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
        loaded.set(path, file);
      }
      const headers: Record<string, string> = {
        'X-Content-Type-Options': 'nosniff',
        // Kept briefly, then revalidated by ETag: a new version of the package shows.
        'Cache-Control': 'public, max-age=300',
        ETag: file.etag,
      };
      if (path === '/docs') headers['Content-Security-Policy'] = CONTENT_SECURITY_POLICY;
      // If-None-Match as for the list (preconditions.ts), not ctx.fresh, which a
      // request's Cache-Control: no-cache defeats.
      if (judgeRead(readConditions(ctx.req.headers), file.etag) === 'not-modified') return { status: 304, headers, type: asset.type };
      return { headers, type: asset.type, body: file.body };
    },
  }));
}
