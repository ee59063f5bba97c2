// The auditors' page (/audit) in a real browser: Debian's chromium, headless, driven by
// playwright-core, against the service's app on each store, signing as the service does,
// with CORS on for another origin and the page's Content-Security-Policy. The page trusts
// the log's keys on first use, loudly; verifies a real receipt and names the step a
// tampered one fails; keeps and exports the checkpoint and keys as the monitor's files;
// draws a pet's 1,000 changes; and its key never reaches a URL, the service's log or
// localStorage. On first use it pins the log's first key and the keys endorsed from it,
// and lists a key added unendorsed or with a forged endorsement as untrusted: a receipt
// such a key signed is never Verified.
//   SCREENSHOTS=1 also writes docs/images/audit-*.png for the auditors' guide.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Download, type Page } from 'playwright-core';
import * as assert from 'uvu/assert';
import { makeCommandHandler } from '../../src/application/write/commands.ts';
import { COLUMNS, formatterFor, NUMERIC } from '../../src/support/audit-format.ts';
import type { AdjustmentRow } from '../../src/store/audit-reads.ts';
import { originOf, verifierKey } from '../../src/support/checkpoint.ts';
import { startApp, type TestApp } from '../kit/app.ts';
import { endorse, keysWithFiles, newSigningKey } from '../kit/signing-keys.ts';
import { openStore } from '../kit/stores.ts';
import { forgeSigningKey } from '../kit/tamper.ts';
import { root } from '../kit/paths.ts';
import { WAIT_MS, withTimeout } from '../kit/service.ts';
import { appSuite } from '../kit/suites.ts';
import { needing, tools } from '../kit/tools.ts';

const CHROMIUM = '/usr/bin/chromium';
const OTHER_ORIGIN = 'https://elsewhere.example';
const signingKey = { pem: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
const audit = appSuite('the auditors page in a real browser', { app: { signingKey, corsOrigins: [OTHER_ORIGIN] } });
const screenshots = (t: TestApp) => process.env.SCREENSHOTS === '1' && t.target.name === 'sqlite';

interface Watched {
  page: Page;
  problems: string[];
  requested: string[];
  origin: string;
}

async function withPage(
  t: TestApp,
  run: (w: Watched, browser: Browser) => Promise<void>,
  { timezoneId = 'UTC' }: { timezoneId?: string } = {},
): Promise<void> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 }, acceptDownloads: true, timezoneId });
    page.setDefaultTimeout(15_000);
    const w: Watched = { page, problems: [], requested: [], origin: `http://127.0.0.1:${t.port}` };
    page.on('console', (message) => {
      if (message.type() === 'error') w.problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => w.problems.push(`page error: ${error.message}`));
    page.on('request', (request) => w.requested.push(request.url()));
    await run(w, browser);
    assert.equal(w.problems, [], 'no console error (a CSP violation is one)');
    const elsewhere = w.requested.filter((u) => !u.startsWith(`${w.origin}/`) && !u.startsWith('data:') && !u.startsWith('blob:'));
    assert.equal(elsewhere, [], 'no request leaves this service');
    assert.ok(
      w.requested.every((u) => !u.includes(t.key)),
      'the key is in no URL',
    );
    assert.ok(
      t.logs.every((line) => !line.includes(t.key)),
      "the key is not in the service's log",
    );
  } finally {
    await browser.close();
  }
}

async function signIn(w: Watched, key: string): Promise<void> {
  const res = await w.page.goto(`${w.origin}/audit`);
  assert.match(String(res?.headers()['content-security-policy']), /script-src 'self'; style-src 'self';/);
  await w.page.fill('#key', key);
  await w.page.click('#signin-form button[type=submit]');
  await w.page.locator('#checkpoint dd').first().waitFor();
}

/** A copy of the page's session or local storage. */
const storageOf = async (page: Page, which: 'sessionStorage' | 'localStorage') =>
  JSON.parse(await page.evaluate<string>(`JSON.stringify({ ...${which} })`)) as Record<string, string>;

/** What the page says of a receipt: its verdict and each step's text. */
async function checkReceipt(page: Page, receipt: string): Promise<{ verdict: string | null; steps: string[] }> {
  await page.fill('#receipt-text', receipt);
  await page.evaluate(() =>
    (globalThis as unknown as { document: { getElementById(id: string): { replaceChildren(): void } } }).document
      .getElementById('receipt-results')
      .replaceChildren(),
  );
  await page.click('#check-receipt');
  const block = page.locator('#receipt-results .receipt').first();
  await block.waitFor();
  return { verdict: await block.getAttribute('data-verdict'), steps: await block.locator('ol.steps li').allInnerTexts() };
}

needing(audit, [tools.chromium])(
  'trusts on first use loudly, verifies a real receipt and names the step a tampered one fails, keeps and exports the checkpoint',
  async ({ t }) => {
    await t.track(1, 1);
    await t.track(2, 1);
    const patched = await t.patch(1, { quantity: 4 });
    assert.is(patched.status, 200);
    const receipt = String(patched.headers['log-receipt']);
    assert.match(receipt, /^v=2, /);

    await withPage(t, async (w) => {
      const { page } = w;
      await signIn(w, t.key);
      assert.match(await page.locator('#trust').innerText(), /Trusting on first use/);
      assert.match(await page.locator('#extends').innerText(), /No checkpoint was kept in this browser yet/);
      const stored = { session: await storageOf(page, 'sessionStorage'), local: await storageOf(page, 'localStorage') };
      assert.equal(Object.values(stored.session), [t.key], 'the key is kept in sessionStorage');
      assert.ok(!JSON.stringify(stored.local).includes(t.key), 'and not in localStorage');

      // The log grows; the page now checks that it extends what it kept.
      for (let pet = 3; pet <= 9; pet++) await t.track(pet, pet);
      await page.reload();
      await page.locator('#checkpoint dd').first().waitFor();
      await page.locator('#extends.good').waitFor();
      const extended = /This log still extends what you saw on \S+ \((\d+) events, now (\d+)\)/.exec(
        await page.locator('#extends').innerText(),
      );
      assert.ok(extended, 'the page says the log extends the kept checkpoint');
      assert.is(Number(extended[2]), Number(extended[1]) + 7, 'by the seven pets tracked since');

      const good = await checkReceipt(page, receipt);
      assert.is(good.verdict, 'ok', good.steps.join('\n'));
      assert.is(good.steps.length, 4);
      assert.ok(
        good.steps.every((s) => /: ok: /.test(s)),
        good.steps.join('\n'),
      );
      assert.ok((await page.locator('#receipt-results svg.tree-path .root.ok').count()) === 1, 'the path reaches the signed root');
      if (screenshots(t)) await page.screenshot({ path: join(root, 'docs/images/audit-receipt.png'), fullPage: true });

      const hash = /hash="([0-9a-f]{64})"/.exec(receipt)![1]!;
      const otherHash = `${hash.slice(0, 10)}${hash[10] === '0' ? '1' : '0'}${hash.slice(11)}`;
      const tampered = await checkReceipt(page, receipt.replace(hash, otherHash));
      assert.is(tampered.verdict, 'failed:inclusion', tampered.steps.join('\n'));
      assert.match(tampered.steps[2]!, /^inclusion: FAILED: the path leads to another root than the checkpoint signed/);
      assert.match(tampered.steps[3]!, /^consistency: not checked/);
      assert.is(await page.locator('#receipt-results svg.tree-path .root.failed').count(), 1);

      const note = Buffer.from(/checkpoint=:([^:]+):/.exec(receipt)![1]!, 'base64').toString('utf8');
      const forged = note.replace(/\n(\d+)\n/, (_, size: string) => `\n${Number(size) + 1}\n`);
      const badSignature = await checkReceipt(
        page,
        receipt.replace(Buffer.from(note).toString('base64'), Buffer.from(forged).toString('base64')),
      );
      assert.is(badSignature.verdict, 'failed:signature', badSignature.steps.join('\n'));
      assert.match(badSignature.steps[1]!, /a wrong signature by the pinned key/);
      const garbled = await checkReceipt(page, 'v=2, log="x"');
      assert.is(garbled.verdict, 'failed:format');

      // Export: the monitor's FILE (the checkpoint's exact bytes) and FILE.keys.
      const downloads: Download[] = [];
      const both = new Promise<void>((resolve) =>
        page.on('download', (d) => {
          if (downloads.push(d) === 2) resolve();
        }),
      );
      await page.click('#export');
      await withTimeout(both, WAIT_MS, 'the two exported files');
      const files = new Map<string, string>();
      // Named as the monitor names them (a text type would make Chromium add .txt).
      for (const d of downloads) files.set(d.suggestedFilename(), readFileSync(await d.path(), 'utf8'));
      const checkpoint = (await t.get('/v1/log/checkpoint')).text;
      assert.is(files.get('checkpoint'), checkpoint);
      const listed = JSON.parse((await t.get('/v1/log/signing-keys')).text) as { verifierKey: string }[];
      assert.is(files.get('checkpoint.keys'), listed.map((k) => `${k.verifierKey}\n`).join(''));

      // A key no pinned key vouched for: said loudly, and nothing is checked against it.
      const head = JSON.parse((await t.get('/v1/log/head')).text) as { logId: string };
      const stranger = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
      const strangerKey = verifierKey(originOf(head.logId), Buffer.from(stranger, 'base64url'));
      await page.evaluate(`localStorage.setItem('petstore-audit.keys', ${JSON.stringify(`${strangerKey}\n`)})`);
      await page.reload();
      await page.locator('#trust.alarm').waitFor();
      assert.match(
        await page.locator('#trust').innerText(),
        /NOT TRUSTED: the newest checkpoint is signed by .* a key that none of your pinned keys vouched for/,
      );
      assert.ok(await page.locator('#trust-listed').isVisible());

      // Import the exported files back: the page trusts them again, and the log extends them.
      await page.setInputFiles('#import', [
        { name: 'checkpoint', mimeType: 'text/plain', buffer: Buffer.from(files.get('checkpoint')!) },
        { name: 'checkpoint.keys', mimeType: 'text/plain', buffer: Buffer.from(files.get('checkpoint.keys')!) },
      ]);
      await page.locator('#extends.good').waitFor();
      assert.is(await page.locator('#trust').innerText(), '');

      await page.click('#signout');
      assert.equal(await storageOf(page, 'sessionStorage'), {});
    });
  },
);

needing(audit, [tools.chromium])("draws a pet's 1,000 changes, lists them, and downloads them as scripts/audit's CSV", async ({ t }) => {
  const commands = makeCommandHandler({ store: t.store, now: () => Date.parse('2026-01-02T03:04:05.678Z') });
  await t.track(42, 10);
  let quantity = 10;
  for (let i = 0; i < 1000; i++) {
    quantity = Math.max(0, quantity + ((i * 7919) % 11) - 5);
    await commands.handle(
      { type: 'SetQuantity', petId: 42n, quantity },
      { actor: i % 3 === 0 ? 'cli:alice' : 'front-desk', requestId: i === 0 ? '=cmd|x' : `req-${i}` },
    );
  }
  await withPage(t, async (w) => {
    const { page } = w;
    await signIn(w, t.key);
    await page.fill('#pet', '42');
    const started = Date.now();
    await page.click('#pet-form button[type=submit]');
    await page.locator('#chart[data-drawn-ms] .uplot canvas').waitFor();
    const wall = Date.now() - started;
    const drawn = Number(await page.locator('#chart').getAttribute('data-drawn-ms'));
    const read = Number(await page.locator('#chart').getAttribute('data-read-ms'));
    console.log(
      `audit page: 1,000 changes read in ${read} ms, chart and table drawn in ${drawn} ms (${wall} ms from the click, as the test saw it) [${t.target.name}]`,
    );
    assert.is(await page.locator('#changes tbody tr').count(), 1000);
    assert.match(await page.locator('#history-status').innerText(), /^1000 changes for pet 42: read in \d+ ms, drawn in \d+ ms\.$/);
    if (screenshots(t)) await page.locator('#history').screenshot({ path: join(root, 'docs/images/audit-history.png') });

    const download = page.waitForEvent('download');
    await page.click('#csv');
    const file = await download;
    assert.is(file.suggestedFilename(), 'stock-adjustments-42.csv');
    const csv = formatterFor('csv', COLUMNS, NUMERIC);
    const rows: AdjustmentRow[] = [];
    for await (const batch of t.store.stockAdjustments({ pet: 42n })) rows.push(...batch);
    assert.is(rows.length, 1000);
    assert.is(
      readFileSync(await file.path(), 'utf8'),
      csv.begin() + rows.map((r) => csv.row(r)).join(''),
      "scripts/audit --pet 42 --format csv's text",
    );
    assert.ok(readFileSync(await file.path(), 'utf8').includes(",cli:alice,'=cmd|x\n"), 'a formula-like request id is text');
  });
});

/** Pets 7 and 8 in March 2026 (UTC): pet 7 counted on the 2nd, then nothing for eight days. */
async function march(t: TestApp): Promise<void> {
  let at = Date.parse('2026-03-01T00:00:00.000Z');
  const commands = makeCommandHandler({ store: t.store, now: () => at });
  const step = async (time: string, command: Parameters<typeof commands.handle>[0], actor: string) => {
    at = Date.parse(time);
    await commands.handle(command, { actor, requestId: `at-${time}` });
  };
  await step('2026-03-01T00:00:00.000Z', { type: 'TrackPet', petId: 7n, quantity: 10, status: 'available' }, 'cli:ops');
  await step('2026-03-01T00:00:00.000Z', { type: 'TrackPet', petId: 8n, quantity: 1, status: 'available' }, 'cli:ops');
  await step('2026-03-02T10:00:00.000Z', { type: 'SetQuantity', petId: 7n, quantity: 12 }, 'front-desk');
  await step('2026-03-10T17:26:00.000Z', { type: 'SetQuantity', petId: 7n, quantity: 30 }, 'clerk-ben');
  await step('2026-03-10T18:00:00.000Z', { type: 'SetQuantity', petId: 8n, quantity: 3 }, 'clerk-ben');
  await step('2026-03-11T08:00:00.000Z', { type: 'SetQuantity', petId: 7n, quantity: 25 }, 'front-desk');
}

/** The filters typed into the form, then Show; resolves with the table's rows (pet and time cells). */
async function show(page: Page, filters: Partial<Record<'pet' | 'actor' | 'since' | 'until', string>>): Promise<string[][]> {
  for (const id of ['pet', 'actor', 'since', 'until'] as const) await page.fill(`#${id}`, filters[id] ?? '');
  await page.evaluate(() => {
    (globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }).document.getElementById(
      'history-status',
    ).textContent = '';
  });
  await page.click('#pet-form button[type=submit]');
  await page.locator('#history-status:not(:empty)').waitFor();
  const rows = await page
    .locator('#changes tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...(tr as unknown as { cells: { textContent: string }[] }).cells].map((c) => c.textContent)));
  return rows.map((cells) => [cells[2]!, cells[1]!, cells[6]!]);
}

/** The chart's canvas as a data URL: its axes, ticks and curve as drawn. */
const chartImage = (page: Page) =>
  page.locator('#chart .uplot canvas').evaluate((canvas) => (canvas as unknown as { toDataURL(): string }).toDataURL());

needing(audit, [tools.chromium])(
  'filters by clerk and time window (UTC), in Tokyo shows every time in UTC with the zone named, and a zoomed view draws the step carried into it',
  async ({ t }) => {
    await march(t);
    let utcImage = '';
    await withPage(t, async (w) => {
      await signIn(w, t.key);
      await show(w.page, { pet: '7' });
      utcImage = await chartImage(w.page);
    });
    await withPage(
      t,
      async (w) => {
        const { page } = w;
        await signIn(w, t.key);
        assert.equal(await show(page, { actor: 'clerk-ben' }), [
          ['7', '2026-03-10T17:26:00.000Z', 'clerk-ben'],
          ['8', '2026-03-10T18:00:00.000Z', 'clerk-ben'],
        ]);
        assert.match(await page.locator('#history-status').innerText(), /^2 changes for by clerk-ben: /);
        assert.is(await page.locator('#chart canvas').count(), 0, 'no chart without a pet');
        // A window without a zone is UTC: 17:00 to midnight UTC on the 10th.
        assert.equal(await show(page, { since: '2026-03-10T17:00', until: '2026-03-11' }), [
          ['7', '2026-03-10T17:26:00.000Z', 'clerk-ben'],
          ['8', '2026-03-10T18:00:00.000Z', 'clerk-ben'],
        ]);
        assert.equal(await show(page, { pet: '7', since: '2026-03-10T19:00+02:00' }), [
          ['7', '2026-03-10T17:26:00.000Z', 'clerk-ben'],
          ['7', '2026-03-11T08:00:00.000Z', 'front-desk'],
        ]);
        assert.equal(await show(page, { actor: 'front-desk', until: '2026-03-03' }), [['7', '2026-03-02T10:00:00.000Z', 'front-desk']]);
        assert.equal(await show(page, { pet: '8', actor: 'front-desk' }), []);
        assert.match(await page.locator('#history-status').innerText(), /^No stock adjustments for pet 8, by front-desk\.$/);

        // Pet 7's chart in Tokyo: the legend names UTC and shows the change at 17:26 UTC on
        // the 10th (02:26 on the 11th in Tokyo), and the whole picture is the one drawn in UTC.
        await show(page, { pet: '7' });
        assert.is(await chartImage(page), utcImage, 'the axis and its ticks are drawn in UTC whatever the zone of the browser');
        const over = (await page.locator('#chart .u-over').boundingBox())!;
        const [first, last] = [Date.parse('2026-03-02T10:00:00.000Z'), Date.parse('2026-03-11T08:00:00.000Z')];
        const xOf = (iso: string) => over.x + ((Date.parse(iso) - first) / (last - first)) * over.width;
        await page.mouse.move(xOf('2026-03-10T17:26:00.000Z'), over.y + over.height / 2);
        const legend = await page.locator('#chart .u-legend').innerText();
        assert.match(legend, /time \(UTC\)/);
        assert.match(legend, /2026-03-10 17:26:00\.000 UTC/);
        assert.match(legend, /quantity\s*30/);

        // Zoomed from the 6th to the 11th: its first change is on the 10th, and the quantity
        // 12 counted on the 2nd is drawn from the view's left edge up to it.
        await page.mouse.move(xOf('2026-03-06T00:00:00.000Z'), over.y + 10);
        await page.mouse.down();
        await page.mouse.move(xOf('2026-03-11T06:00:00.000Z'), over.y + 20, { steps: 5 });
        await page.mouse.up();
        const strokeAtLeftEdge = await page.locator('#chart .uplot canvas').evaluate((canvas, box) => {
          const c = canvas as unknown as {
            getBoundingClientRect(): { x: number; y: number };
            width: number;
            clientWidth: number;
            getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } };
          };
          const ratio = c.width / c.clientWidth;
          const rect = c.getBoundingClientRect();
          const x = Math.round((box.x - rect.x + 4) * ratio);
          const { data } = c.getContext('2d').getImageData(x, Math.round((box.y - rect.y) * ratio), 1, Math.round(box.height * ratio));
          let blue = 0;
          for (let i = 0; i < data.length; i += 4) if (data[i]! < 90 && data[i + 2]! > 180 && data[i + 3]! > 200) blue++;
          return blue;
        }, over);
        assert.ok(strokeAtLeftEdge > 0, 'the step carried into the zoomed view is drawn at its left edge');
      },
      { timezoneId: 'Asia/Tokyo' },
    );
  },
);

needing(audit, [tools.chromium])(
  'a first use pins the log`s first key and the keys endorsed from it; an unendorsed or forged key is UNTRUSTED, its receipts never Verified',
  async ({ t }) => {
    await t.track(1, 1);
    const [endorsedKey, unendorsedKey, forgedKey] = [newSigningKey(), newSigningKey(), newSigningKey()];
    await endorse(t.db, signingKey, endorsedKey);
    const added = await keysWithFiles(t.db, (file) => ['add-signing', file, '--unendorsed'], undefined, unendorsedKey);
    assert.is(added.status, 0, added.stderr);
    // Written with SQL, endorsed by itself: a signature that verifies, by no key of the log.
    await forgeSigningKey(t.target, t.db, forgedKey, 'self-endorsed');
    const apps: TestApp[] = [];
    try {
      const receipts: string[] = [];
      for (const [i, key] of [endorsedKey, unendorsedKey, forgedKey].entries()) {
        const app = await startApp({
          target: t.target,
          signingKey: key,
          keyName: `instance-${i}`,
          open: (_f, now) => openStore(t.db, { now, signingKey: key }),
        });
        apps.push(app);
        const patched = await app.patch(1, { quantity: 10 + i });
        assert.is(patched.status, 200, patched.text);
        receipts.push(String(patched.headers['log-receipt']));
      }
      const listed = JSON.parse((await t.get('/v1/log/signing-keys')).text) as { keyId: string; verifierKey: string }[];
      assert.is(listed.length, 4);
      await withPage(apps[0]!, async (w) => {
        const { page } = w;
        await signIn(w, apps[0]!.key);
        const trust = await page.locator('#trust').innerText();
        assert.match(trust, /Trusting on first use: .* the log's first key and the 1 key\(s\) endorsed from it are pinned/);
        for (const k of listed.slice(0, 2)) assert.ok(trust.includes(k.verifierKey), `${k.keyId} pinned:\n${trust}`);
        for (const k of listed.slice(2)) assert.not.ok(trust.includes(k.verifierKey), `${k.keyId} not pinned:\n${trust}`);
        await page.locator('#untrusted.alarm').waitFor();
        const untrusted = await page.locator('#untrusted').innerText();
        assert.match(untrusted, new RegExp(`^UNTRUSTED: key ${listed[2]!.keyId} \\(no endorsement: added --unendorsed`));
        assert.ok(untrusted.includes(`key ${listed[3]!.keyId} (its endorsement does not verify against a trusted key)`), untrusted);
        const pins = (await storageOf(page, 'localStorage'))['petstore-audit.keys'];
        assert.is(pins, `${listed[0]!.verifierKey}\n${listed[1]!.verifierKey}\n`);

        const endorsed = await checkReceipt(page, receipts[0]!);
        assert.is(endorsed.verdict, 'ok', endorsed.steps.join('\n'));
        for (const receipt of receipts.slice(1)) {
          const refused = await checkReceipt(page, receipt);
          assert.is(refused.verdict, 'failed:signature', refused.steps.join('\n'));
          assert.match(refused.steps[1]!, /signed by no pinned key/);
        }
      });
    } finally {
      for (const app of apps) await app.close();
    }
  },
);

audit.run();
