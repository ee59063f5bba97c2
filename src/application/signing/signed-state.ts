// A key never signs two checkpoints that disagree: that would be a fork, which C2SP
// forbids and which no monitor could tell from a rewrite. So the signer keeps, beside its
// key file (`<key file>.signed`), the largest tree it has published for each log: its
// size and root, updated once the commit it covers is done and its answers went out,
// without waiting for the disk, at most every STATE_WRITE_SPACING_MS (a crash may leave
// the file behind, never ahead). A log smaller than that, or whose tree at that size has
// another root (a restored backup, a rewritten log), is refused before the key signs
// anything for it.
import { linkSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { writeFile, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { frontierNodes, nodeId, treeRoot } from '../../support/merkle.ts';
import type { AuditReads } from '../../store/audit-reads.ts';

interface Published {
  size: number;
  /** The root, standard base64. */
  root: string;
}

type State = Record<string, Published>;

/** Where a key file's signer keeps what it published. */
export function signedStatePath(keyPath: string): string {
  return `${keyPath}.signed`;
}

function readState(path: string): State {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  const parsed = JSON.parse(text) as { logs?: State };
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.logs !== 'object') {
    throw new Error(`${path} is not a signer's state (a JSON object with "logs")`);
  }
  return parsed.logs;
}

const stateText = (logs: State) => `${JSON.stringify({ logs }, null, 2)}\n`;

/**
 * Why the key whose state is at path must not sign for the store's log, or undefined
 * when the log extends everything the key published for it.
 */
export async function forkOf(store: Pick<AuditReads, 'logHead' | 'treeNodes'>, path: string): Promise<string | undefined> {
  const head = await store.logHead();
  const published = readState(path)[head.logId];
  if (!published) return undefined;
  const fix =
    'sign the restored log with a new key endorsed by this one (scripts/keys endorse-signing NEW_KEY_FILE, then start with INVENTORY_SIGNING_KEY=NEW_KEY_FILE)';
  if (head.seq < published.size) {
    return `this key signed a tree of ${published.size} events for log ${head.logId}, which now holds ${head.seq}: the log was restored or cut; ${fix}`;
  }
  const nodes = await store.treeNodes(frontierNodes(published.size));
  let root: string;
  try {
    root = treeRoot(published.size, (level, index) => nodes.get(nodeId(level, index))).toString('base64');
  } catch {
    root = '(missing nodes)';
  }
  if (root !== published.root) {
    return `the log's tree of ${published.size} events has root ${root}, not ${published.root} as this key signed: the log was rewritten or restored; ${fix}`;
  }
  return undefined;
}

/** The least time between two writes of the state while trees keep being published. A
 * write per batch cost the event loop a file open, write, close and rename for every few
 * PATCHes; spaced out, the file may lag what was published by this much more after a
 * crash, well within what an unsynced write already risks (the kernel writes it back
 * seconds later), and a clean stop still writes the last tree (flush). */
const STATE_WRITE_SPACING_MS = 100;

/**
 * Records trees as they are published: the newest one per log is written in the
 * background, one write at a time (renamed into place whole), at most one write every
 * spacingMs, never a smaller tree. flush() writes what is pending at once. At start, it
 * removes the copies that writes cut short left beside the state.
 */
export function makeSignedStateWriter(
  path: string,
  onError: (error: Error) => void,
  spacingMs = STATE_WRITE_SPACING_MS,
): { published(logId: string, size: number, root: Buffer): void; flush(): Promise<void> } {
  const logs = readState(path);
  removeAbandonedWrites(path, onError);
  let writing: Promise<void> | undefined;
  let dirty = false;
  let lastWrite = -Infinity;
  /** Set by flush: every write from then on goes at once. */
  let urgent = false;
  /** Ends the wait before a write, when one is under way. */
  let hurry: (() => void) | undefined;
  // What is published while a write is under way is written by the next one.
  const kick = () => {
    if (writing) return;
    writing = write()
      .catch((error: unknown) => onError(error as Error))
      .finally(() => {
        writing = undefined;
        if (dirty) kick();
      });
  };
  const spaced = () => {
    const wait = lastWrite + spacingMs - performance.now();
    if (wait <= 0 || urgent) return undefined;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      hurry = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => (hurry = undefined));
  };
  const write = async () => {
    while (dirty) {
      await spaced();
      dirty = false;
      const whole = `${path}.${process.pid}.tmp`;
      await writeFile(whole, stateText(logs), { mode: 0o600 });
      await rename(whole, path);
      lastWrite = performance.now();
    }
  };
  return {
    published(logId, size, root) {
      const known = logs[logId];
      if (known && known.size >= size) return;
      logs[logId] = { size, root: root.toString('base64') };
      dirty = true;
      kick();
    },
    async flush() {
      urgent = true;
      hurry?.();
      try {
        await writing;
      } finally {
        urgent = false;
      }
    },
  };
}

/** A write's whole copy is renamed into place within moments of being written: one
 * older than this was left by a process that ended between the two. */
const ABANDONED_MS = 60_000;

/** Removes the whole copies (`<path>.<pid>.tmp`, `<path>.tmp`) that processes stopped
 * between writing and renaming left beside the state, so that they do not pile up beside
 * the key file; a copy still fresh may be a running process's, and stays. */
function removeAbandonedWrites(path: string, onError: (error: Error) => void): void {
  const at = Date.now();
  const folder = dirname(path);
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch (error) {
    onError(error as Error);
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix) || !/^(\d+\.)?tmp$/.test(name.slice(prefix.length))) continue;
    const copy = join(folder, name);
    try {
      if (at - statSync(copy).mtimeMs > ABANDONED_MS) unlinkSync(copy);
    } catch (error) {
      // Removed meanwhile by another process starting on the same key.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') onError(error as Error);
    }
  }
}

/**
 * Records that a key has signed nothing yet, beside a key just made or just entered in a
 * log, unless a record is there already: written whole, then linked into place, so that
 * of two processes doing it at once the first wins and a record of signed trees is
 * never replaced.
 */
export function recordNothingSigned(path: string): void {
  const whole = `${path}.${process.pid}.tmp`;
  writeFileSync(whole, stateText({}), { mode: 0o600 });
  try {
    linkSync(whole, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(whole);
  }
}

/** Writes the state at once (tests and tools that set it up). */
export function writeSignedState(path: string, logs: State): void {
  writeFileSync(`${path}.tmp`, stateText(logs), { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}
