// docs/auditors.md's tile verifier, Go's tlog.TileHashReader over the log's C2SP tiles,
// taken from the page as it is and built: on both stores it passes the service's tiles
// (full, partial, two levels) and refuses a checkpoint signed by a key it was not given;
// it passes a copy made by scripts/mirror and served by nginx, without a key,
// and refuses that copy with one byte of a tile or of an event's entry changed.
import * as assert from 'uvu/assert';
import { TILE_VERIFIER } from '../kit/auditors-guide.ts';
import { buildGo, run } from '../kit/guide-programs.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from '../kit/paths.ts';
import { nginx, serveWithNginx } from '../kit/nginx.ts';
import { mirrored, newPem, signedLogSuite, verifierKeyOf } from '../kit/tiles.ts';
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

needing(service, [tools.goSumdb, nginx])(
  "verifies a copy served by nginx with no key, and refuses it with one byte of a tile or an event's entry changed",
  async ({ t }) => {
    const dir = tempDir('auditors-tiles-copy-');
    try {
      const verify = await buildGo(dir, TILE_VERIFIER, 'verify_tiles');
      const verifierKey = await verifierKeyOf(t);
      await mirrored(t, verifierKey, dir.path('copy'));
      const served = await serveWithNginx(dir.path('copy'));
      try {
        const intact = await run(verify, [served.url, verifierKey], { INVENTORY_KEY: '' });
        assert.is(intact.status, 0, intact.output);
        assert.match(intact.output, /OK: every entry bundle holds the tree's leaves \(700 events\)\n$/);
        for (const [file, at, refusal] of [
          [
            'v1/log/tile/0/001',
            33,
            /^BROKEN: the hash tiles are not the checkpoint's tree: tile 0\/1 does not fold to the hash above it\n$/m,
          ],
          ['v1/log/tile/entries/001', 40, /^BROKEN: entry bundle 1: the event with seq 258 is not the tree's leaf\n$/m],
        ] as const) {
          const original = readFileSync(dir.path(`copy/${file}`));
          const changed = Buffer.from(original);
          changed[at] = changed[at]! ^ 1;
          writeFileSync(dir.path(`copy/${file}`), changed);
          const r = await run(verify, [served.url, verifierKey], { INVENTORY_KEY: '' });
          writeFileSync(dir.path(`copy/${file}`), original);
          assert.is(r.status, 1, `${file}: ${r.output}`);
          assert.match(r.output, refusal, `${file}: ${r.output}`);
        }
      } finally {
        await served.close();
      }
    } finally {
      dir.cleanup();
    }
  },
);

service.run();
