// GET /audit: the auditors' page (its files in ./audit, the chart library out of the uplot
// package), and GET /v1/audit/stock-adjustments, the read it draws a pet's history from:
// one pet's rows of the stock_adjustments view, a keyset page at a time, as JSON or as
// the CSV scripts/audit writes (audit-format.ts, guarded against spreadsheet formulas).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { stockAdjustmentPage, type StockHistorySource } from '../application/stock-history.ts';
import { COLUMNS, formatterFor, NUMERIC } from '../cli/audit-format.ts';
import { parsePetId } from '../domain/events.ts';
import { HttpError } from './errors.ts';
import type { Route } from './router.ts';
import { assetRoutes, pagePolicy } from './static-assets.ts';

const UPLOT = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
const HERE = join(dirname(new URL(import.meta.url).pathname), 'audit');

// Scripts and styles only from here, no inline ones (the chart library sets styles
// through the DOM, which a policy does not govern); the API is this origin; downloads
// are made from blob: URLs the page creates.
const CONTENT_SECURITY_POLICY = pagePolicy({ styles: "'self'", images: "'self' data: blob:" });

const JS = 'text/javascript; charset=utf-8';
const PARAMETERS = new Set(['pet', 'after', 'limit', 'format']);
export const MAX_ADJUSTMENTS = 1000;
const DEFAULT_ADJUSTMENTS = 100;

interface AdjustmentQuery {
  pet: bigint;
  after: bigint;
  limit: number;
  format: 'json' | 'csv';
}

const bad = (message: string) => new HttpError(400, 'bad_request', message);

/** The query, judged as text: decimal digits without sign or leading zeros, each given once. */
function readQuery(query: Record<string, string | string[] | undefined>): AdjustmentQuery {
  for (const [name, value] of Object.entries(query)) {
    if (!PARAMETERS.has(name))
      throw bad(`unknown query parameter ${JSON.stringify(name.slice(0, 100))}: only pet, after, limit and format`);
    if (Array.isArray(value)) throw bad(`${name} is given more than once`);
  }
  const { pet: petText, after = '0', limit = String(DEFAULT_ADJUSTMENTS), format = 'json' } = query as Record<string, string | undefined>;
  if (petText === undefined) throw bad('pet is required: the pet id whose adjustments to list');
  const pet = parsePetId(petText);
  if (pet === undefined)
    throw bad(`pet must be a pet id (decimal digits, 1 to 9223372036854775807), not ${JSON.stringify(petText.slice(0, 40))}`);
  if (!/^(0|[1-9]\d{0,15})$/.test(after) || !Number.isSafeInteger(Number(after))) {
    throw bad(
      `after must be a seq: a decimal integer of at least 0 (no sign, no leading zeros), not ${JSON.stringify(after.slice(0, 40))}`,
    );
  }
  if (!/^[1-9]\d{0,3}$/.test(limit) || Number(limit) > MAX_ADJUSTMENTS) {
    throw bad(`limit must be an integer from 1 to ${MAX_ADJUSTMENTS}, not ${JSON.stringify(limit.slice(0, 40))}`);
  }
  if (format !== 'json' && format !== 'csv') throw bad(`format must be json or csv, not ${JSON.stringify(format.slice(0, 40))}`);
  return { pet, after: BigInt(after), limit: Number(limit), format };
}

export function auditRoutes({ store }: { store: StockHistorySource }): Route[] {
  return [
    ...assetRoutes({
      '/audit': { file: join(HERE, 'index.html'), type: 'text/html; charset=utf-8', policy: CONTENT_SECURITY_POLICY },
      '/audit/audit.css': { file: join(HERE, 'audit.css'), type: 'text/css; charset=utf-8' },
      '/audit/page.js': { file: join(HERE, 'page.js'), type: JS },
      '/audit/verify.js': { file: join(HERE, 'verify.js'), type: JS },
      '/audit/draw.js': { file: join(HERE, 'draw.js'), type: JS },
      '/audit/common.js': { file: join(HERE, 'common.js'), type: JS },
      '/audit/log-state.js': { file: join(HERE, 'log-state.js'), type: JS },
      '/audit/receipts-view.js': { file: join(HERE, 'receipts-view.js'), type: JS },
      '/audit/history.js': { file: join(HERE, 'history.js'), type: JS },
      '/audit/uPlot.min.css': { file: join(UPLOT, 'uPlot.min.css'), type: 'text/css; charset=utf-8' },
      '/audit/uPlot.iife.min.js': { file: join(UPLOT, 'uPlot.iife.min.js'), type: JS },
    }),
    {
      method: 'GET',
      template: '/v1/audit/stock-adjustments',
      handler: async (ctx) => {
        const query = readQuery(ctx.query);
        const { rows, next } = await stockAdjustmentPage(store, query);
        const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
        if (next !== undefined) {
          const format = query.format === 'csv' ? '&format=csv' : '';
          headers.Link = `</v1/audit/stock-adjustments?pet=${query.pet}&after=${next}&limit=${query.limit}${format}>; rel="next"`;
        }
        const formatter = formatterFor(query.format === 'csv' ? 'csv' : 'jsonl', COLUMNS, NUMERIC);
        if (query.format === 'csv') {
          headers['Content-Disposition'] = `attachment; filename="stock-adjustments-${query.pet}.csv"`;
          return { headers, type: 'text/csv; charset=utf-8', body: formatter.begin() + rows.map((r) => formatter.row(r)).join('') };
        }
        const items = rows.map((r) => formatter.row(r).trimEnd()).join(',');
        const body = `{"adjustments":[${items}],"next":${next === undefined ? 'null' : String(next)}}`;
        return { headers, type: 'application/json; charset=utf-8', body };
      },
    },
  ];
}
