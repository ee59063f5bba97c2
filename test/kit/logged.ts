// A wait for a log line of a test app: the service logs some warnings after the answer
// that caused them (a key looked up once the request was refused).
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp } from './app.ts';

/** Waits (at most 5 s) for a log line that says pattern; returns it. */
export async function logged(t: Pick<TestApp, 'logs'>, pattern: RegExp): Promise<string> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const line = t.logs.find((l) => pattern.test(l));
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no log line says ${pattern} within 5 s: ${t.logs.slice(-3).join('')}`);
    await sleep(20);
  }
}
