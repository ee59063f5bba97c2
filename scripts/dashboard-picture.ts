// Draws the Grafana dashboard's panels from real data, for the documentation's picture:
// a service on SQLite and one on PostgreSQL (an embedded server), each under a 90/10
// GET/PATCH load in turn, scraped every second by Prometheus (Debian's package); every
// panel of docs/grafana/inventory-dashboard.json is queried over the run with its own
// PromQL, drawn as lines in a page, and the page photographed by chromium. Grafana itself
// is not installable on this machine. The queries are the dashboard's, with one change:
// their 5-minute rate windows become 10 s ones, since the whole run lasts about 80 s
// (a 5-minute window over it would draw a slow ramp, not the rates).
//   node --import tsx scripts/dashboard-picture.ts [OUT.png]   (about 90 s)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startPrometheus } from '../test/kit/prometheus.ts';
import { createDatabase, startPostgres } from './embedded-postgres.ts';
import { freePort, makeDatabase } from './bench/fixtures.ts';
import { children, load, ready, start, stop } from './bench/harness.ts';
import { scriptArgs } from './script-args.ts';

interface Panel {
  title: string;
  fieldConfig: { defaults: { unit: string } };
  targets: { expr: string; legendFormat: string }[];
}

const ROOT = new URL('..', import.meta.url).pathname;
const OUT = scriptArgs(import.meta.url, {}, 1).positionals[0] ?? join(ROOT, 'docs/images/dashboard.png');
const PHASE_SECONDS = 30;
const PETS = 1000;

const panels = (JSON.parse(readFileSync(join(ROOT, 'docs/grafana/inventory-dashboard.json'), 'utf8')) as { panels: Panel[] }).panels;
const dir = mkdtempSync(join(tmpdir(), 'dashboard-'));
const postgres = await startPostgres('dashboard');
try {
  const url = await createDatabase(postgres.url, 'dashboard');
  const keys = [await makeDatabase(join(dir, 'inventory.db'), PETS), await makeDatabase(url, PETS)];
  const ports = [await freePort(), await freePort()];
  const services = [join(dir, 'inventory.db'), url].map((db, i) =>
    start(['src/server.ts'], { PORT: String(ports[i]), HOST: '127.0.0.1', INVENTORY_DB: db, LOG_LEVEL: 'warn' }),
  );
  await Promise.all(ports.map((p) => ready(p, '/healthz')));
  const prometheus = await startPrometheus(ports);
  try {
    const began = Date.now();
    await new Promise((r) => setTimeout(r, 8_000)); // Prometheus takes up its targets
    for (const [i, port] of ports.entries()) await load(port, 'mix', PHASE_SECONDS, 20, keys[i]!, PETS);
    await new Promise((r) => setTimeout(r, 5_000));
    const seconds = Math.ceil((Date.now() - began) / 1000);
    const drawn = [];
    for (const panel of panels) {
      const series = [];
      for (const target of panel.targets) {
        for (const s of await prometheus.queryRange(target.expr.replaceAll('[5m]', '[10s]'), seconds, 1)) {
          const name = target.legendFormat.replace(/\{\{(\w+)\}\}/g, (_, label: string) => s.metric[label] ?? '');
          series.push({ name, points: s.values.map(([t, v]) => [t, Number(v)] as [number, number]) });
        }
      }
      drawn.push(svgPanel(panel.title, panel.fieldConfig.defaults.unit, series));
    }
    const html = `<!doctype html><meta charset="utf-8"><style>
      body{margin:0;padding:16px;background:#111217;color:#ccccdc;font:13px sans-serif}
      h1{font-size:18px;margin:0 0 12px} .grid{display:grid;grid-template-columns:1fr 1fr;gap:10px}
      .panel{background:#181b1f;border:1px solid #2c3235;border-radius:3px;padding:8px}
      .title{font-weight:600;margin-bottom:4px} .legend span{margin-right:12px;white-space:nowrap}
    </style><h1>petstore-inventory: SQLite (port ${ports[0]}) then PostgreSQL (port ${ports[1]}), ${PHASE_SECONDS} s of 90/10 GET/PATCH each (rates over 10 s)</h1>
    <div class="grid">${drawn.join('')}</div>`;
    writeFileSync(join(dir, 'dashboard.html'), html);
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`file://${join(dir, 'dashboard.html')}`);
      await page.screenshot({ path: OUT, fullPage: true });
    } finally {
      await browser.close();
    }
    console.log(`dashboard-picture: ${drawn.length} panels over ${seconds} s written to ${OUT}`);
  } finally {
    await prometheus.stop();
    await Promise.all(services.map((s) => stop(s)));
  }
} finally {
  for (const child of children) child.kill('SIGKILL');
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
}

function format(value: number, unit: string): string {
  if (!Number.isFinite(value)) return '–';
  switch (unit) {
    case 's':
      return value < 1 ? `${(value * 1000).toFixed(value < 0.01 ? 2 : 1)} ms` : `${value.toFixed(2)} s`;
    case 'bytes':
      return value >= 1e6 ? `${(value / 1e6).toFixed(1)} MB` : `${(value / 1e3).toFixed(1)} kB`;
    case 'percentunit':
      return `${(value * 100).toFixed(1)}%`;
    case 'reqps':
    case 'ops':
      return `${value.toFixed(value < 10 ? 2 : 0)}/s`;
    default:
      return value.toFixed(value < 10 ? 2 : 0);
  }
}

function svgPanel(title: string, unit: string, series: { name: string; points: [number, number][] }[]): string {
  const W = 660;
  const H = 170;
  const colours = ['#73bf69', '#f2cc0c', '#8ab8ff', '#ff780a', '#f2495c', '#5794f2', '#b877d9', '#fade2a'];
  const all = series.flatMap((s) => s.points).filter(([, v]) => Number.isFinite(v));
  const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  if (all.length === 0) {
    return `<div class="panel"><div class="title">${escape(title)}</div><svg width="${W}" height="${H}"><text x="${W / 2}" y="${H / 2}" fill="#777" text-anchor="middle">no data in this run</text></svg></div>`;
  }
  const t0 = Math.min(...all.map(([t]) => t));
  const t1 = Math.max(...all.map(([t]) => t));
  const max = Math.max(...all.map(([, v]) => v), 0) || 1;
  const x = (t: number) => 60 + ((t - t0) / Math.max(t1 - t0, 1)) * (W - 70);
  const y = (v: number) => H - 20 - (v / max) * (H - 30);
  const lines = series.map((s, i) => {
    const d = s.points.filter(([, v]) => Number.isFinite(v)).map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    return `<polyline fill="none" stroke="${colours[i % colours.length]}" stroke-width="1.5" points="${d.join(' ')}"/>`;
  });
  const grid = [0, 0.5, 1]
    .map(
      (f) =>
        `<line x1="60" x2="${W - 10}" y1="${y(max * f)}" y2="${y(max * f)}" stroke="#2c3235"/>` +
        `<text x="55" y="${y(max * f) + 4}" fill="#8e8e8e" font-size="11" text-anchor="end">${format(max * f, unit)}</text>`,
    )
    .join('');
  const legend = series
    .map((s, i) => `<span style="color:${colours[i % colours.length]}">■</span> <span>${escape(s.name || 'value')}</span>`)
    .join('');
  return `<div class="panel"><div class="title">${escape(title)}</div><svg width="${W}" height="${H}">${grid}${lines.join('')}</svg><div class="legend">${legend}</div></div>`;
}
