// The memory rows of npm run bench: a fresh service on a store of 100,000 pets, its
// resident set read from /proc when it has started and answers (idle), every 250 ms
// under a load (steady: the median of the load's second half) and at its highest
// (peak: VmHWM), under GET alone and under a user's mix (each PATCH followed by a GET of
// the whole list, so that the list is rendered anew for nearly every GET while earlier
// renders are still being read).
import { readFileSync } from 'node:fs';
import { freePort } from './fixtures.ts';
import { load, median, peakRssMb, ready, startService, stop, type Load } from './harness.ts';

export const MEMORY_PETS = 100_000;
/** PATCH-then-GET pairs of the mix, in all. */
export const PAIRS = 600;
/** The most a service with MEMORY_PETS pets may hold at any time. */
const PEAK_MB = 150;

export interface MemoryRun {
  name: string;
  load: Load;
  idleMb: number;
  steadyMb: number;
  peakMb: number;
}

/** Resident set size of a process now, in MB (Linux: VmRSS). */
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** A fresh service on target under mode ('get' or 'pairs') at 10 connections. */
async function memoryRun(store: string, target: string, key: string, mode: 'get' | 'pairs', seconds: number): Promise<MemoryRun> {
  const port = await freePort();
  const service = startService({ PORT: String(port), HOST: '127.0.0.1', INVENTORY_DB: target, LOG_LEVEL: 'info' });
  try {
    await ready(port, '/healthz');
    const pid = service.pid!;
    const idleMb = rssMb(pid);
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMb(pid)), 250);
    const run = await (mode === 'get'
      ? load(port, 'get', seconds, 10, key, MEMORY_PETS)
      : load(port, 'pairs', 120, 10, key, MEMORY_PETS, PAIRS));
    clearInterval(sampler);
    const result = {
      name: `${store}: ${mode === 'get' ? 'GET' : `${PAIRS} PATCH-then-GET pairs`}, ${MEMORY_PETS} pets, 10 conn.`,
      load: run,
      idleMb,
      steadyMb: median(samples.slice(Math.floor(samples.length / 2))),
      peakMb: peakRssMb(pid),
    };
    console.log(
      `${result.name.padEnd(52)} ${run.requests.average.toFixed(0).padStart(7)} req/s  RSS idle ${idleMb.toFixed(0)} MB, ` +
        `steady ${result.steadyMb.toFixed(0)} MB, peak ${result.peakMb.toFixed(0)} MB`,
    );
    return result;
  } finally {
    await stop(service);
  }
}

/** A store's two runs: GET alone, then the mix, each on a fresh service. */
export async function memoryRuns(store: string, target: string, key: string, seconds: number): Promise<MemoryRun[]> {
  return [await memoryRun(store, target, key, 'get', seconds), await memoryRun(store, target, key, 'pairs', seconds)];
}

/** The target row of a run: its peak, with idle and steady beside it. */
export function memoryTarget(run: MemoryRun) {
  return {
    name: `${run.name.split(',')[0]}: peak RSS (idle ${run.idleMb.toFixed(0)}, steady ${run.steadyMb.toFixed(0)})`,
    measured: `${run.peakMb.toFixed(0)} MB`,
    target: `<= ${PEAK_MB} MB`,
    met: run.peakMb <= PEAK_MB,
  };
}
