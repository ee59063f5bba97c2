// Many readers of one large list at once: a PATCH (so that the list must be rendered
// anew), then `clients` sockets ask for GET /v1/inventory together, while /healthz is
// asked on a socket of its own, one probe after another with PROBE_GAP_MS between them,
// until every reader has its whole body. What the probes waited says whether sending one
// list to many sockets holds the event loop.
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const PROBE_GAP_MS = 10;

export interface ReadersRound {
  /** Each /healthz probe's wait, from its request to its answer's end (ms). */
  healthzMs: number[];
  /** From the first reader's request to the last one's whole body (ms). */
  readersMs: number;
  /** The bytes each reader got (all alike when the list was shared). */
  bytes: number[];
  /** Answers that were not 200 (readers and probes). */
  failures: number;
}

/** One GET; resolves with its status, the body's length and how long it took. */
function get(port: number, path: string, headers: Record<string, string>, agent: Agent | false) {
  return new Promise<{ status: number; bytes: number; ms: number }>((resolve, reject) => {
    const began = performance.now();
    const req = request({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - began }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function patch(port: number, key: string, petId: number, quantity: number) {
  return new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ quantity });
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'PATCH',
        path: `/v1/inventory/${petId}`,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The readers, in a process of their own (this file run as a script): reading 300
 * large bodies keeps a process busy, and a probe beside them in the same process would
 * measure its own event loop, not the service's. Prints "ready", waits for a line, sends
 * the GETs together, prints what they got as JSON. */
async function readersProcess(port: number, key: string, clients: number): Promise<void> {
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const auth = { authorization: `Bearer ${key}` };
  const began = performance.now();
  // A reader whose connection the service closed counts as a failure (status 0).
  const answers = await Promise.all(
    Array.from({ length: clients }, () => get(port, '/v1/inventory', auth, false).catch(() => ({ status: 0, bytes: 0, ms: NaN }))),
  );
  process.stdout.write(`${JSON.stringify({ ms: performance.now() - began, answers: answers.map((a) => [a.status, a.bytes]) })}\n`);
  process.exit(0);
}

/** One round: a PATCH, then `clients` readers at once (in a process of their own) with
 * /healthz probed beside them. */
export async function readersRound(port: number, key: string, clients: number, quantity: number): Promise<ReadersRound> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), String(port), key, String(clients)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  if ((await lines.next()).value !== 'ready') throw new Error('the readers process did not start');
  const failures = (await patch(port, key, 1, quantity)) === 200 ? 0 : 1;
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  // The probe's socket is open before the readers come: its wait is the service's, not a connect's.
  await get(port, '/healthz', {}, probeAgent);
  child.stdin.write('go\n');
  let done = false;
  const result = lines.next().finally(() => (done = true));
  const healthzMs: number[] = [];
  let probeFailures = 0;
  while (!done) {
    const probe = await get(port, '/healthz', {}, probeAgent);
    healthzMs.push(probe.ms);
    if (probe.status !== 200) probeFailures++;
    await new Promise((resolve) => setTimeout(resolve, PROBE_GAP_MS));
  }
  probeAgent.destroy();
  const { ms, answers } = JSON.parse(String((await result).value)) as { ms: number; answers: [number, number][] };
  return {
    healthzMs,
    readersMs: ms,
    bytes: answers.map(([, bytes]) => bytes),
    failures: failures + probeFailures + answers.filter(([status]) => status !== 200).length,
  };
}

/** The q-quantile of values (nearest rank). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [port, key, clients] = process.argv.slice(2);
  await readersProcess(Number(port), key!, Number(clients));
}
