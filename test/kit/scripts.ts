// Runs an operator command the way an operator does: the real wrapper script in scripts/,
// as a child process from the repository's root, with INVENTORY_DB unset unless the test
// sets it, and every wait bounded.
import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { tmpdir } from 'node:os';
import type { Readable } from 'node:stream';
import { root, scriptPath } from './paths.ts';

export interface ScriptOptions {
  /** Appended as --db <db>. */
  db?: string;
  /** Added to the environment (INVENTORY_DB only when set here). */
  env?: Record<string, string>;
  /** Written to the command's standard input, which is then closed. */
  input?: string;
  /** Runs as this user (and group of the same id), with HOME at the temp dir. */
  uid?: number;
  /** The working directory; the repository's root unless given. */
  cwd?: string;
  /** Killed (SIGKILL) after this long; 30 s unless given. */
  timeoutMs?: number;
}

export interface ScriptResult {
  /** The command line, for messages. */
  what: string;
  status: number | null;
  stdout: string;
  stderr: string;
}

function invocation(name: string, args: string[], options: ScriptOptions) {
  const env: NodeJS.ProcessEnv = { ...process.env, ...(options.uid === undefined ? {} : { HOME: tmpdir() }), ...options.env };
  if (options.env?.INVENTORY_DB === undefined) delete env.INVENTORY_DB;
  const argv = options.db === undefined ? args : [...args, '--db', options.db];
  return {
    file: scriptPath(name),
    argv,
    what: [name, ...argv].join(' '),
    spawnOptions: {
      cwd: options.cwd ?? root,
      env,
      timeout: options.timeoutMs ?? 30_000,
      killSignal: 'SIGKILL' as const,
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
    },
  };
}

/** Runs scripts/<name> and resolves once it exited and its output is read. */
export function runScript(name: string, args: string[], options: ScriptOptions = {}): Promise<ScriptResult> {
  const { file, argv, what, spawnOptions } = invocation(name, args, options);
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { ...spawnOptions, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.on('error', reject);
    child.on('close', (status) => resolve({ what, status, stdout, stderr }));
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Starts scripts/<name> and hands back the process (stdout and stderr piped), for a test that reads it as it runs or signals it. */
export function spawnScript(name: string, args: string[], options: ScriptOptions = {}): ChildProcessByStdio<null, Readable, Readable> {
  const { file, argv, spawnOptions } = invocation(name, args, options);
  return spawn(file, argv, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** runScript, blocking: for the few places that must not yield (a callback that runs inside another command). */
export function runScriptSync(name: string, args: string[], options: ScriptOptions = {}): ScriptResult {
  const { file, argv, what, spawnOptions } = invocation(name, args, options);
  const r = spawnSync(file, argv, { ...spawnOptions, encoding: 'utf8', input: options.input });
  if (r.error && r.status === null && r.signal === null) throw r.error;
  return { what, status: r.status, stdout: r.stdout ?? '', stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}` };
}
