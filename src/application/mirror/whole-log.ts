// The monitor's first run against a copy served by a static server, which has no feed and
// no signed head: the whole log is checked from the tiles instead, as scripts/mirror
// checks it (every tile against the newest checkpoint's root, every event's hash from its
// fields), in a scratch directory removed afterwards. The monitor then checks that
// checkpoint's signature as on any first run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCheckpoint, parseNote } from '../../support/checkpoint.ts';
import { tilePath, type Tile } from '../../support/tiles.ts';
import { copyBundles } from './copy-bundles.ts';
import { copyDir } from './copy-dir.ts';
import { copyHashTiles, fileOf } from './copy-hash-tiles.ts';
import type { LogSource } from './log-source.ts';
import { GENESIS_HASH } from '../../store/hash-chain.ts';

type Verdict = { ok: true; events: number; head: { seq: number; hash: string } } | { ok: false; reason: string };

export async function wholeLogFromTiles(source: LogSource): Promise<Verdict> {
  const note = parseNote(await source.text('/v1/log/checkpoint'));
  const checkpoint = note instanceof Error ? note : parseCheckpoint(note.text);
  if (checkpoint instanceof Error) return { ok: false, reason: `the newest checkpoint: ${checkpoint.message}` };
  const scratch = mkdtempSync(join(tmpdir(), 'inventory-log-'));
  try {
    const dir = copyDir(scratch);
    const fetchTile = (tile: Tile) => source.bytes(`/v1/log/${tilePath(tile)}`);
    const { size, root } = checkpoint;
    const wrong = (await copyHashTiles({ size, root, dir, fetchTile })) ?? (await copyBundles({ size, dir, fetchTile }));
    if (wrong) return { ok: false, reason: wrong };
    const last = size === 0 ? undefined : { kind: 'entries' as const, index: Math.floor((size - 1) / 256), width: ((size - 1) % 256) + 1 };
    const entries = last && dir.read(fileOf(last));
    return {
      ok: true,
      events: size,
      head: { seq: size, hash: entries ? entries.subarray(entries.length - 32).toString('hex') : GENESIS_HASH },
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
