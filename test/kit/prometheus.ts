// A real Prometheus server (Debian's package) scraping services on 127.0.0.1 every
// second, and its query API: the dashboard's and the documentation's PromQL are
// evaluated by Prometheus itself, not by a reading of their text.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tempDir } from './paths.ts';
import { withTimeout } from './service.ts';

const PROMETHEUS = '/usr/bin/prometheus';

/** The value of one sample of a /metrics page, by its name and exact label set ('' for none); undefined when absent. */
export function sample(text: string, name: string, labels = ''): number | undefined {
  const wanted = labels ? `${name}{${labels}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(wanted));
  return line === undefined ? undefined : Number(line.slice(wanted.length));
}

export interface Prometheus {
  url: string;
  /** An instant query: the result vector, or rejects with Prometheus's own error. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** A range query over the last `seconds`, one point per `step` seconds. */
  queryRange(expr: string, seconds: number, step: number): Promise<{ metric: Record<string, string>; values: [number, string][] }[]>;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping /metrics of these ports every second; waits until it is ready. */
export async function startPrometheus(ports: readonly number[]): Promise<Prometheus> {
  const dir = tempDir('prometheus-');
  const targets = ports.map((p) => `'127.0.0.1:${p}'`).join(', ');
  writeFileSync(
    dir.path('prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: inventory\n    static_configs:\n      - targets: [${targets}]\n`,
  );
  const proc: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${dir.path('prometheus.yml')}`,
      `--storage.tsdb.path=${dir.path('data')}`,
      // Port 0: the port it got is read from its "Listening on" line.
      '--web.listen-address=127.0.0.1:0',
      '--log.level=info',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (t: string) => (stderr += t));
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const stop = async () => {
    proc.kill('SIGTERM');
    await withTimeout(exited, 15_000, 'Prometheus to stop');
    dir.cleanup();
  };
  const deadline = Date.now() + 30_000;
  let url = '';
  for (;;) {
    const address = /msg="Listening on" address=(127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
    if (address) url = `http://${address}`;
    if (proc.exitCode !== null) throw new Error(`Prometheus exited ${proc.exitCode}: ${stderr}`);
    const ready =
      url !== '' &&
      (await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      ));
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Prometheus was not ready within 30 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }

  const api = async <T>(path: string, params: Record<string, string>): Promise<T> => {
    const res = await fetch(`${url}${path}?${new URLSearchParams(params).toString()}`);
    const body = (await res.json()) as { status: string; data?: { result: T }; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus refused ${params.query}: ${body.error}`);
    return body.data!.result;
  };
  return {
    url,
    query: (expr) => api('/api/v1/query', { query: expr }),
    queryRange: (expr, seconds, step) => {
      const end = Date.now() / 1000;
      return api('/api/v1/query_range', { query: expr, start: String(end - seconds), end: String(end), step: String(step) });
    },
    stop,
  };
}
