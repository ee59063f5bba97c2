// Files a page of this service is made of (/docs, /audit), served from the service itself:
// nothing from a CDN, so a page works where its users can reach only the service. Only
// the files listed are served (no path is ever joined with a file name a client sent).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { judgeRead, readConditions } from '../input/preconditions.ts';
import type { Route } from './router.ts';

export interface Asset {
  file: string;
  type: string;
  /** The Content-Security-Policy of a page (its HTML); none for the files it loads. */
  policy?: string;
}

/**
 * A page's Content-Security-Policy: scripts from this origin only, requests to it only,
 * no forms, no frames; `styles` and `images` are the page's own sources for those.
 */
export function pagePolicy({ styles, images }: { styles: string; images: string }): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src ${styles}`,
    `img-src ${images}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** One public GET route per asset, each answered with an ETag and revalidated by it. */
export function assetRoutes(assets: Record<string, Asset>): Route[] {
  // Read on first use, then kept: a page is rarely asked for, and some bundles are large.
  const loaded = new Map<string, { body: Buffer; etag: string }>();
  return Object.entries(assets).map(([path, asset]): Route => ({
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
      if (asset.policy !== undefined) headers['Content-Security-Policy'] = asset.policy;
      // If-None-Match as for the list (preconditions.ts), not ctx.fresh, which a
      // request's Cache-Control: no-cache defeats.
      if (judgeRead(readConditions(ctx.req.headers), file.etag) === 'not-modified') return { status: 304, headers, type: asset.type };
      return { headers, type: asset.type, body: file.body };
    },
  }));
}
