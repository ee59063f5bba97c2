// The auditors' commands against a copy made by scripts/mirror and served by a static
// server (no feed, no signed head, no proof routes), on both stores: the monitor's first
// run checks the whole log from the tiles, its later run and verify-receipt fold their
// consistency proofs from the tiles.
import * as assert from 'uvu/assert';
import { trackPets } from '../kit/fixtures.ts';
import { tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { serveStatic } from '../kit/static-server.ts';
import { signedLogSuite, verifierKeyOf } from '../kit/tiles.ts';

const copies = signedLogSuite('the auditors’ commands against a copy', 600);

copies('the monitor and verify-receipt pass a copy, with proofs folded from its tiles', async ({ t }) => {
  const dir = tempDir('copy-tools-');
  const served = await serveStatic(dir.path('copy'));
  try {
    const vkey = await verifierKeyOf(t);
    const patched = await t.patch(5, { quantity: 9 });
    assert.is(patched.status, 200, patched.text);
    const receipt = patched.headers['log-receipt'] as string;
    const mirror = () =>
      runScript('mirror', ['--url', `http://127.0.0.1:${t.port}`, '--trust', vkey, dir.path('copy')], {
        env: { INVENTORY_KEY: t.key },
        timeoutMs: 120_000,
      });
    assert.is((await mirror()).status, 0);
    const env = { INVENTORY_KEY: 'any' };
    const monitor = () => runScript('verify-log', ['--url', served.url, '--checkpoint', dir.path('kept'), '--trust', vkey], { env });
    const first = await monitor();
    assert.is(first.status, 0, first.stderr);
    assert.match(first.stderr, /^ok: 601 events through the API, chain intact, signed head at seq 601 valid$/m);

    await trackPets(
      t.store,
      Array.from({ length: 300 }, (_, i) => ({ petId: 1000 + i })),
    );
    assert.is((await mirror()).status, 0);
    const later = await monitor();
    assert.is(later.status, 0, later.stderr);
    assert.match(later.stderr, /the newest checkpoint \(901 events\) is signed by a trusted key and extends the kept one \(601 events\)/);
    const checked = await runScript('verify-receipt', ['--url', served.url, '--trust', vkey, receipt], { env });
    assert.is(checked.status, 0, checked.stderr);
    assert.match(checked.stderr, /the newest checkpoint \(901 events\) extends it/);
  } finally {
    await served.close();
    dir.cleanup();
  }
});

copies.run();
