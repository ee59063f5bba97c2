// node --import tsx scripts/stall-attack.ts [--pets 100000] [--sockets 300] [--open 2000] [--rounds 1]
//
// Reproduces clients that send requests and never read the answers, against a real
// service process (node --import tsx src/server.ts) on a fresh database with many pets,
// on 127.0.0.1 only, and prints the service's resident memory (and its peak) before and
// after, and how many of the attacking sockets are still open afterwards.
//   1. With a key: each socket sends a PATCH and then GET /v1/inventory, never reads.
//      The PATCH changes the list, so every GET needs a newer body than the last one;
//      GETs that arrive while a list is being rendered share the next render.
//   2. Without a key: each socket sends 20 pipelined GET /openapi.json, never reads.
// Every count and wait is bounded; the service and the database are removed at the end.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { commandsFor } from '../src/application/write/commands.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';

const { values } = parseArgs({
  options: {
    pets: { type: 'string', default: '100000' },
    sockets: { type: 'string', default: '300' },
    open: { type: 'string', default: '2000' },
    // How long to watch after the service has answered everything: past the 30 s stall limit.
    watch: { type: 'string', default: '40' },
    // The keyed attack again and again on one service: its memory must not creep.
    rounds: { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'node --import tsx scripts/stall-attack.ts [--pets 100000] [--sockets 300] [--open 2000] [--watch 40] [--rounds 1]\n' +
      'Clients that never read their answers, against a service on 127.0.0.1; prints its memory and open sockets.\n' +
      '--open 0 leaves out the pipelined GET /openapi.json part.\n',
  );
  process.exit(0);
}
const PETS = Math.min(Number(values.pets), 200_000);
const SOCKETS = Math.min(Number(values.sockets), 1000);
const OPEN = Math.min(Number(values.open), 5000);
const WATCH_S = Math.min(Number(values.watch), 120);
const ROUNDS = Math.max(1, Math.min(Number(values.rounds), 10));

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'inv-stall-'));
const dbPath = join(dir, 'inventory.db');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function seed(): Promise<string> {
  const store = await openSqliteStore(dbPath);
  const key = await store.keys.create('attacker', 'stall-attack');
  const commands = commandsFor(store);
  for (let first = 1; first <= PETS; first += 10_000) {
    const batch = [];
    for (let id = first; id < Math.min(first + 10_000, PETS + 1); id++) {
      batch.push({ type: 'TrackPet' as const, petId: BigInt(id), quantity: 1, status: 'available' as const });
    }
    await commands.handleAll(batch, { actor: 'cli:stall-attack', requestId: 'seed' });
  }
  await store.close();
  return key;
}

// The service's own view of its memory, every 50 ms on its standard error: what V8's
// heap holds (heapUsed of heapTotal) and what Buffers hold outside it (arrayBuffers,
// part of external). RSS above their sum is code, SQLite's cache, and what the
// allocator keeps after it was freed.
const SAMPLER = 'data:text/javascript,setInterval(()=>process.stderr.write("MEM "+JSON.stringify(process.memoryUsage())+"\\n"),50).unref()';
type Usage = Record<'rss' | 'heapTotal' | 'heapUsed' | 'external' | 'arrayBuffers', number>;
const ZERO: Usage = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
/** The highest of each since the last reset, and the split when RSS was highest. */
let usage = { peak: { ...ZERO }, atPeakRss: { ...ZERO }, last: { ...ZERO } };
let partial = '';
function heard(chunk: Buffer): void {
  const lines = (partial + chunk.toString()).split('\n');
  partial = lines.pop()!;
  for (const line of lines) {
    if (!line.startsWith('MEM ')) continue;
    const m = JSON.parse(line.slice(4)) as Usage;
    usage.last = m;
    if (m.rss > usage.peak.rss) usage.atPeakRss = m;
    for (const k of Object.keys(ZERO) as (keyof Usage)[]) usage.peak[k] = Math.max(usage.peak[k], m[k]);
  }
}
const mb = (u: Usage) =>
  Object.entries(u)
    .map(([k, v]) => `${k} ${(v / 1024 / 1024).toFixed(0)}`)
    .join(', ');

function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** Sockets the service has open: a client that does not read cannot see them closed. */
function socketsOf(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed while listed
    }
  }
  return n;
}

/** CPU seconds the service has used (user + system). */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

async function attack(
  name: string,
  pid: number,
  port: number,
  sockets: number,
  pause: number,
  payload: (i: number) => string[],
): Promise<void> {
  const before = memory(pid);
  usage = { peak: { ...ZERO }, atPeakRss: { ...ZERO }, last: { ...ZERO } };
  const baseSockets = socketsOf(pid);
  const t0 = Date.now();
  const attackers: Socket[] = [];
  for (let i = 0; i < sockets; i++) {
    const socket = await opened(port);
    socket.on('error', () => undefined);
    // Never read: paused, the socket takes nothing off its receive buffer.
    socket.pause();
    // A pause between the parts lets a PATCH commit before its GET renders the list.
    for (const part of payload(i)) {
      socket.write(part);
      await sleep(pause);
    }
    attackers.push(socket);
  }
  let peak = memory(pid).rss;
  // The service may still be working through the requests (each GET renders 100,000
  // rows after its PATCH): the watch starts once it is idle, so that every request has
  // been answered into a socket that nobody reads.
  for (let cpu = cpuOf(pid), idle = 0; idle < 2 && Date.now() - t0 < 300_000;) {
    await sleep(500);
    peak = Math.max(peak, memory(pid).rss);
    const used = cpuOf(pid) - cpu;
    cpu += used;
    idle = used < 0.05 ? idle + 1 : 0;
  }
  console.log(`${name}: sent and answered in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const started = Date.now();
  const openAt: Record<number, number> = {};
  while (Date.now() - started < WATCH_S * 1000) {
    await sleep(250);
    peak = Math.max(peak, memory(pid).rss);
    const second = Math.floor((Date.now() - started) / 1000);
    openAt[second] = socketsOf(pid) - baseSockets;
  }
  const after = memory(pid);
  const seconds = Object.keys(openAt).map(Number);
  const at = (s: number) => openAt[seconds.filter((x) => x <= s).at(-1) ?? 0];
  console.log(
    `${name}: RSS ${before.rss.toFixed(0)} MB before, overall peak ${peak.toFixed(0)} MB (VmHWM ${after.peak.toFixed(0)} MB), ` +
      `${after.rss.toFixed(0)} MB ${WATCH_S} s after it was idle; the service still had open, of ${sockets}: ${at(0)} when idle, ${at(5)} at 5 s, ` +
      `${at(20)} at 20 s, ${at(35)} at 35 s, ${at(WATCH_S)} at ${WATCH_S} s`,
  );
  console.log(
    `${name}: in MB, the highest of each: ${mb(usage.peak)}; at the highest RSS: ${mb(usage.atPeakRss)}; at the end: ${mb(usage.last)}`,
  );
  for (const s of attackers) s.destroy();
  await sleep(1000);
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const key = await seed();
  console.log(`seeded ${PETS} pets in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const proc = spawn(process.execPath, ['--import', SAMPLER, '--import', 'tsx', 'src/server.ts'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', INVENTORY_DB: dbPath },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the service did not start: ${out}`)), 30_000);
      const listen = (chunk: Buffer) => {
        out += chunk.toString();
        const m = /127\.0\.0\.1:(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      };
      // The 'listening' line (standard output) names the port; keep both pipes drained.
      proc.stdout.on('data', listen);
      proc.stderr.on('data', heard);
    });
    // A first GET renders the list once, as any real service would have.
    const warm = await opened(port);
    warm.write(`GET /v1/inventory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);
    await new Promise((r) => warm.on('close', r).resume());
    console.log(`service pid ${proc.pid} on port ${port}, ${PETS} pets`);

    for (let round = 1; round <= ROUNDS; round++) {
      await attack(`round ${round}: PATCH+GET with a key, ${SOCKETS} sockets`, proc.pid!, port, SOCKETS, 30, (i) => {
        const body = JSON.stringify({ quantity: i % 1000 });
        return [
          `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\n\r\n${body}`,
          `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`,
        ];
      });
    }
    if (OPEN > 0)
      await attack(`pipelined GET /openapi.json without a key, ${OPEN} sockets`, proc.pid!, port, OPEN, 0, () => [
        'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(20),
      ]);
  } finally {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
