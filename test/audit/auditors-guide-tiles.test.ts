// docs/auditors.md's tile verifier, Go's tlog.TileHashReader over the log's C2SP tiles,
// taken from the page as it is and built: on both stores it passes the service's tiles
// (full, partial, two levels) and refuses a checkpoint signed by a key it was not given.
import * as assert from 'uvu/assert';
import { TILE_VERIFIER } from '../kit/auditors-guide.ts';
import { buildGo, run } from '../kit/guide-programs.ts';
import { tempDir } from '../kit/paths.ts';
import { newPem, signedLogSuite, verifierKeyOf } from '../kit/tiles.ts';
import { needing, tools } from '../kit/tools.ts';
import { verifierKey as verifierKeyFor } from '../../src/support/checkpoint.ts';
import { makeSigner } from '../../src/support/signing.ts';

const OTHER = newPem();
const SIZE = 700;

const service = signedLogSuite("the auditors' guide: Go's TileHashReader against the service", SIZE);

needing(service, [tools.goSumdb])('verifies every tile and bundle of the service, and no checkpoint of another key', async ({ t }) => {
  const dir = tempDir('auditors-tiles-');
  try {
    const verify = await buildGo(dir, TILE_VERIFIER, 'verify_tiles');
    const verifierKey = await verifierKeyOf(t);
    const url = `http://127.0.0.1:${t.port}`;
    const intact = await run(verify, [url, verifierKey], { INVENTORY_KEY: t.key });
    assert.is(intact.status, 0, intact.output);
    assert.is(
      intact.output,
      [
        `OK: the newest checkpoint (${SIZE} events) is signed by ${verifierKey.split('+')[0]}`,
        `OK: every hash tile is the checkpoint's tree (${SIZE} events)`,
        `OK: every entry bundle holds the tree's leaves (${SIZE} events)`,
        '',
      ].join('\n'),
    );
    const other = await run(
      verify,
      [url, verifierKeyFor(verifierKey.split('+')[0]!, Buffer.from(makeSigner(OTHER).publicKey, 'base64url'))],
      { INVENTORY_KEY: t.key },
    );
    assert.is(other.status, 1, other.output);
    assert.match(other.output, /^BROKEN: the newest checkpoint: /);
  } finally {
    dir.cleanup();
  }
});

service.run();
