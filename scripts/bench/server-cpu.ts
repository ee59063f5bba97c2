// The CPU of the PostgreSQL server processes serving one database's sessions (Linux: the
// server runs on this machine), read from /proc for each backend: what a load costs the
// server, beside what it costs the process that sends it.
import pg from 'pg';
import { cpuMicros } from './harness.ts';

/** User plus system CPU µs of each backend now connected to url's database, by pid. */
export async function serverCpuNow(url: string): Promise<Map<number, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return new Map(rows.map((r) => [r.pid, cpuMicros(`/proc/${r.pid}/stat`)]));
  } finally {
    await client.end();
  }
}

/** The backends' CPU µs between two readings (a backend that started between them counts whole). */
export function serverCpuSince(before: Map<number, number>, after: Map<number, number>): number {
  return [...after].reduce((total, [pid, us]) => total + us - (before.get(pid) ?? 0), 0);
}
