// scripts/mirror's run: a copy of a log (from the service or from another copy) that is
// provably the one its operator signed. It trusts keys as the monitor does (DIR/checkpoint.keys),
// opens the newest checkpoint with them, checks that it extends the one the copy kept,
// then fetches what the copy lacks (tiles top down, then bundles), each piece checked
// before it is written, and the checkpoint last: a run that fails keeps nothing of the
// piece that did not match, and the copy keeps serving the checkpoint it had.
import { trust } from '../verify/monitor.ts';
import { extensionProblem, newestCheckpoint, openCheckpoint, type SignedCheckpoint } from '../verify/checkpoint-checks.ts';
import { signedOutsideKeyTime } from '../signing/trust.ts';
import { ORIGIN_PREFIX } from '../../support/checkpoint.ts';
import { tilePath, type Tile } from '../../support/tiles.ts';
import { copyBundles, keptRows } from './copy-bundles.ts';
import type { CopyDir } from './copy-dir.ts';
import { copyHashTiles } from './copy-hash-tiles.ts';
import { updateEventsDb } from './events-db.ts';
import type { LogSource } from './log-source.ts';
import { withTileProofs } from './tile-proofs.ts';

const CHECKPOINT = 'v1/log/checkpoint';
const KEYS = 'checkpoint.keys';

interface MirrorRun {
  source: LogSource;
  dir: CopyDir;
  /** Verifier keys given now (--trust). */
  trust: readonly string[];
  /** Told of each line of the report. */
  report: (line: string) => void;
  /** Told how many events the copy holds, of how many. */
  onProgress?: (events: number, total: number) => void;
}

type MirrorVerdict = { ok: true; size: number; kept: number; tiles: number } | { ok: false; reason: string };

/** The newest checkpoint, trusted and extending the kept one, or why not. */
async function checkpointToCopy(run: MirrorRun, get: (path: string) => Promise<string>) {
  const report: string[] = [];
  const keptKeys = run.dir.read(KEYS)?.toString('utf8');
  const trusted = await trust({ get, trust: run.trust, keptKeys: keptKeys?.split('\n').filter((l) => l.trim() !== '') }, report);
  report.forEach(run.report);
  const newest = await newestCheckpoint(get, trusted.trusted, 'mirror');
  if (typeof newest === 'string') return newest;
  const keptNote = run.dir.read(CHECKPOINT)?.toString('utf8');
  let kept: SignedCheckpoint | undefined;
  if (keptNote !== undefined) {
    const opened = openCheckpoint(keptNote, trusted.trusted, 'mirror');
    if ('problem' in opened) return `the copy's checkpoint: ${opened.problem}`;
    kept = opened;
    const wrong = await extensionProblem(get, kept, newest);
    if (wrong) return wrong;
  }
  const outside = signedOutsideKeyTime(newest, trusted.trusted, trusted.listed);
  if (outside) return `the newest checkpoint: ${outside}`;
  return { newest, kept, keys: [...new Set(trusted.keys)] };
}

export async function mirror(run: MirrorRun): Promise<MirrorVerdict> {
  const { source, dir } = run;
  const get = withTileProofs(source);
  const checked = await checkpointToCopy(run, get);
  if (typeof checked === 'string') return { ok: false, reason: checked };
  const { newest, kept } = checked;
  let tiles = 0;
  const fetchTile = (tile: Tile) => {
    tiles++;
    return source.bytes(`/v1/log/${tilePath(tile)}`);
  };
  const wrongTiles = await copyHashTiles({ size: newest.size, root: newest.root, dir, fetchTile });
  if (wrongTiles) return { ok: false, reason: wrongTiles };
  const onProgress = run.onProgress && ((events: number) => run.onProgress!(events, newest.size));
  const wrongBundles = await copyBundles({ size: newest.size, dir, fetchTile, ...(onProgress ? { onProgress } : {}) });
  if (wrongBundles) return { ok: false, reason: wrongBundles };
  await updateEventsDb({
    file: dir.path('events.db'),
    logId: newest.origin.slice(ORIGIN_PREFIX.length),
    size: newest.size,
    rowsAfter: (after) => keptRows(newest.size, dir, after),
  });
  dir.write('v1/log/signing-keys', await source.bytes('/v1/log/signing-keys'));
  dir.write(KEYS, checked.keys.map((k) => `${k}\n`).join(''));
  dir.write(CHECKPOINT, newest.note);
  return { ok: true, size: newest.size, kept: kept?.size ?? 0, tiles };
}
