// A long-running child process read line by line (a follower that never exits by
// itself): its standard output as lines so far, its standard error, its exit, and a wait
// for a count of lines that fails early when the child exits; and how to stop one started
// in a process group of its own, with everything it started.
import type { ChildProcess, ChildProcessWithoutNullStreams } from 'node:child_process';

export interface LineReader {
  proc: ChildProcessWithoutNullStreams;
  lines: string[];
  err(): string;
  exited: Promise<number | null>;
  /** Resolves once count lines arrived; throws after ms or when the child exits first. */
  waitFor(count: number, ms?: number): Promise<void>;
}

export function readLines(proc: ChildProcessWithoutNullStreams): LineReader {
  const lines: string[] = [];
  let err = '';
  let rest = '';
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return {
    proc,
    lines,
    err: () => err,
    exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))),
    async waitFor(count, ms = 20_000) {
      const started = Date.now();
      while (lines.length < count) {
        if (Date.now() - started > ms) throw new Error(`${lines.length} of ${count} lines after ${ms} ms; stderr: ${err}`);
        if (proc.exitCode !== null) throw new Error(`the process exited ${proc.exitCode} after ${lines.length} of ${count} lines: ${err}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

/**
 * Stops a child started detached (its own process group) and everything it started:
 * SIGTERM to the group, then waits until the child has exited and no process of the
 * group is left (at most ms), so that a folder they wrote into can be removed without one
 * of them still writing into it.
 */
export async function stopGroup(proc: ChildProcess, ms = 10_000): Promise<void> {
  const group = -proc.pid!;
  // False once no process of the group is left to take the signal.
  const signal = (name: NodeJS.Signals | 0) => {
    try {
      process.kill(group, name);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      return false;
    }
  };
  const exited =
    proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise((resolve) => proc.once('exit', resolve));
  signal('SIGTERM');
  const started = Date.now();
  // The child too: it is a member of its group until it has exited and been reaped.
  while (signal(0)) {
    if (Date.now() - started > ms) throw new Error(`processes of group ${-group} still running ${ms} ms after SIGTERM`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await exited;
}
