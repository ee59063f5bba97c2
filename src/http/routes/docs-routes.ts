// GET /docs: the OpenAPI document as an interactive page (Swagger UI), with every asset
// served from here, out of the swagger-ui-dist package (static-assets.ts).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Route } from './router.ts';
import { assetRoutes, pagePolicy } from './static-assets.ts';

const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const HERE = join(dirname(new URL(import.meta.url).pathname), 'docs');

// Scripts only from here; Swagger UI sets inline styles and draws icons as data: images.
// "Try it out" and the document are fetched from this origin only.
const CONTENT_SECURITY_POLICY = pagePolicy({ styles: "'self' 'unsafe-inline'", images: "'self' data:" });

export function docsRoutes(): Route[] {
  return assetRoutes({
    '/docs': { file: join(HERE, 'index.html'), type: 'text/html; charset=utf-8', policy: CONTENT_SECURITY_POLICY },
    '/docs/init.js': { file: join(HERE, 'init.js'), type: 'text/javascript; charset=utf-8' },
    '/docs/swagger-ui.css': { file: join(SWAGGER_UI, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
    '/docs/swagger-ui-bundle.js': { file: join(SWAGGER_UI, 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
  });
}
