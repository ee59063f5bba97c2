// A wait for a log line of a test app: the service logs some warnings after the answer
// that caused them (a key looked up once the request was refused), and a request's access
// line once its response has closed, which may come after the client read the answer.
import type { TestApp } from './app.ts';

/** Waits for a log line that says pattern, looked for again at each new line; returns it.
 * Fails after boundMs (15 s unless given), far above what a loaded machine needs. */
export async function logged(t: Pick<TestApp, 'logs' | 'nextLog'>, pattern: RegExp, boundMs = 15_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no log line says ${pattern} within ${boundMs} ms: ${t.logs.slice(-3).join('')}`)), boundMs);
  });
  try {
    for (;;) {
      // Asked for before the lines are read: a line written in between still wakes the wait.
      const next = t.nextLog();
      const line = t.logs.find((l) => pattern.test(l));
      if (line) return line;
      await Promise.race([next, gaveUp]);
    }
  } finally {
    clearTimeout(timer);
  }
}
