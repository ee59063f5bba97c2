// GET /audit: the auditors' page (its files in ./audit, the chart library out of the uplot
// package), and GET /v1/audit/stock-adjustments, the read it draws a pet's history from:
// the rows of the stock_adjustments table by pet, actor and time window, a keyset page at
// a time, as JSON or as the CSV scripts/audit writes (audit-format.ts, guarded against
// spreadsheet formulas).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { stockAdjustmentPage, type StockHistorySource } from '../../application/read/stock-history.ts';
import { COLUMNS, formatterFor, NUMERIC } from '../../support/audit-format.ts';
import { HttpError } from '../stages/errors.ts';
import type { Refusal } from '../input/parameters.ts';
import type { JudgedParameters } from '../input/operation-input.ts';
import { parseInstant } from '../../support/instant.ts';
import { withInput, type Route } from './router.ts';
import { readsOnNextTurn } from '../stages/key-fairness.ts';
import { assetRoutes, pagePolicy } from './static-assets.ts';

const UPLOT = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
const HERE = join(dirname(new URL(import.meta.url).pathname), 'audit');

// Scripts and styles only from here, no inline ones (the chart library sets styles
// through the DOM, which a policy does not govern); the API is this origin; downloads
// are made from blob: URLs the page creates.
const CONTENT_SECURITY_POLICY = pagePolicy({ styles: "'self'", images: "'self' data: blob:" });

const JS = 'text/javascript; charset=utf-8';
const ADJUSTMENTS = '/v1/audit/stock-adjustments';

interface AdjustmentQuery {
  pet?: bigint;
  actor?: string;
  /** As recorded_at writes times (support/instant.ts). */
  since?: string;
  until?: string;
  after: bigint;
  limit: number;
  format: 'json' | 'csv';
}

const bad = (message: string) => new HttpError(400, 'bad_request', message);
const quoted = (text: string | undefined) => JSON.stringify((text ?? '').slice(0, 40));
const badTime = (name: string, text: string | undefined) =>
  bad(
    `${name} must be an ISO 8601 instant, such as 2026-11-21T10:00:00Z, 2026-11-21T12:00:00+02:00 or 2026-11-21 ` +
      `(a time of day needs Z or an offset), not ${quoted(text)}`,
  );

/** A time the document's pattern let through, as recorded_at writes times; one that does
 * not exist (30 February, 24:00) is refused as the pattern's misses are. */
function instantOf(name: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const instant = parseInstant(text);
  if (instant === undefined) throw badTime(name, text);
  return instant;
}

// What a parameter the document's schema refuses is answered with, where its schema's
// rule does not say enough (pet, after, limit and format are refused by that rule).
const REFUSALS: Record<string, Refusal> = {
  actor: (_name, text) => bad(`actor must be an actor's name (1 to 256 characters, no control characters), not ${quoted(text)}`),
  since: (name, text) => badTime(name, text),
  until: (name, text) => badTime(name, text),
};

/** The query as the router judged it (only the operation's parameters, each once, each by
 * its schema in the document), with its times as recorded_at writes them. */
function adjustmentQuery(given: JudgedParameters): AdjustmentQuery {
  // after, limit and format: never undefined, the router gives the defaults the document states.
  const { pet, actor, after, limit, format } = given;
  const since = instantOf('since', given.since);
  const until = instantOf('until', given.until);
  return {
    ...(pet === undefined ? {} : { pet: BigInt(pet) }),
    ...(actor === undefined ? {} : { actor }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    after: BigInt(after!),
    limit: Number(limit!),
    format: format! === 'csv' ? 'csv' : 'json',
  };
}

/** The next page's address: the filters as the client gave them, `after` moved on. */
function nextPage(given: Record<string, string>, next: bigint, limit: number): string {
  const params = new URLSearchParams();
  for (const name of ['pet', 'actor', 'since', 'until'] as const) if (given[name] !== undefined) params.set(name, given[name]);
  params.set('after', String(next));
  params.set('limit', String(limit));
  if (given.format === 'csv') params.set('format', 'csv');
  return `${ADJUSTMENTS}?${params.toString()}`;
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
      template: ADJUSTMENTS,
      operation: 'listStockAdjustments',
      rules: { refusals: REFUSALS },
      stages: [readsOnNextTurn],
      handler: withInput(adjustmentQuery, async (ctx, query) => {
        const { rows, next } = await stockAdjustmentPage(store, query);
        const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
        if (next !== undefined) headers.Link = `<${nextPage(ctx.query as Record<string, string>, next, query.limit)}>; rel="next"`;
        const formatter = formatterFor(query.format === 'csv' ? 'csv' : 'jsonl', COLUMNS, NUMERIC);
        if (query.format === 'csv') {
          const name = query.pet === undefined ? 'stock-adjustments' : `stock-adjustments-${query.pet}`;
          headers['Content-Disposition'] = `attachment; filename="${name}.csv"`;
          return { headers, type: 'text/csv; charset=utf-8', body: formatter.begin() + rows.map((r) => formatter.row(r)).join('') };
        }
        const items = rows.map((r) => formatter.row(r).trimEnd()).join(',');
        const body = `{"adjustments":[${items}],"next":${next === undefined ? 'null' : String(next)}}`;
        return { headers, type: 'application/json; charset=utf-8', body };
      }),
    },
  ];
}
