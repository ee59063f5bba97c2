// The docs page in a real browser: Debian's chromium, headless, driven by playwright-core,
// against a real service. The page loads without a console error, lists both operations
// with their errors, makes no request that leaves this service, and "Try it out" with a
// key gets the list, with a pet id above 2^53 shown exactly.
//   SCREENSHOTS=1 also writes docs/images/docs-page.png for the documentation.
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { root, tempDir } from '../kit/paths.ts';
import { runScript } from '../kit/scripts.ts';
import { startService, type Service } from '../kit/service.ts';
import { needing, tools } from '../kit/tools.ts';

const CHROMIUM = '/usr/bin/chromium';
const BIG = '9007199254740993';
const test = suite('the docs page in a real browser');

needing(test, [tools.chromium])(
  'loads cleanly, lists both operations and their errors, stays on this service, and tries GET with a key',
  async () => {
    const dir = tempDir('docs-browser-');
    let service: Service | undefined;
    let browser: Browser | undefined;
    try {
      service = await startService({ db: dir.path('inventory.db'), expectKey: true });
      for (const [pet, quantity] of [
        ['1', '5'],
        [BIG, '12'],
      ] as const) {
        const tracked = await runScript('track', [pet, '--quantity', quantity], { db: dir.path('inventory.db') });
        assert.is(tracked.status, 0, tracked.stderr);
      }
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        timeout: 30_000,
        args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      });
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.setDefaultTimeout(15_000);
      const problems: string[] = [];
      const requested: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) => requested.push(request.url()));

      const origin = `http://127.0.0.1:${service.port}`;
      await page.goto(`${origin}/docs`);
      await page.waitForSelector('.opblock-get');
      const summaries = await page.locator('.opblock-summary').allInnerTexts();
      assert.ok(
        summaries.some((s) => /^GET\s+\/inventory\s/.test(s)),
        summaries.join(' | '),
      );
      assert.ok(
        summaries.some((s) => /^PATCH\s+\/inventory\/\{petId\}\s/.test(s)),
        summaries.join(' | '),
      );
      // The extension: reading one entry, with the summary the document gives it.
      assert.ok(
        summaries.some((s) => /^GET\s+\/inventory\/\{petId\}\s/.test(s) && s.includes("One pet's entry and its version")),
        summaries.join(' | '),
      );

      // Each operation with every answer it can give, read from the expanded operation.
      const listedCodes = async (block: ReturnType<typeof page.locator>) => {
        await block.locator('.opblock-summary').click();
        await block.locator('.responses-table tr.response').first().waitFor();
        const listed = await block.locator('.responses-table tr.response > td.response-col_status').allInnerTexts();
        await block.locator('.opblock-summary').click();
        return listed;
      };
      const get = page.locator('.opblock-get').first();
      const getCodes = await listedCodes(get);
      for (const code of ['200', '304', '400', '401', '412', '503'])
        assert.ok(getCodes.includes(code), `GET lists ${code}: ${getCodes.join(',')}`);
      const patch = page.locator('.opblock-patch').first();
      const codes = await listedCodes(patch);
      for (const code of ['200', '400', '401', '404', '412', '415', '503'])
        assert.ok(codes.includes(code), `PATCH lists ${code}: ${codes.join(',')}`);

      // Authorize with the key, then try the GET.
      await page.click('.btn.authorize');
      await page.fill('.auth-container input', service.bootstrapKey!);
      await page.click('.auth-btn-wrapper .authorize');
      await page.click('.auth-btn-wrapper .btn-done');
      await get.locator('.opblock-summary').click();
      await get.locator('.execute').click();
      const status = get.locator('.live-responses-table tr.response > td.response-col_status');
      await status.first().waitFor();
      assert.is((await status.first().innerText()).trim(), '200');
      const body = await get.locator('.live-responses-table .response-col_description pre').first().innerText();
      assert.match(body, /"petId": 1,/);
      assert.match(body, new RegExp(`"petId": ${BIG},`), 'the id above 2^53 is shown exactly, not rounded');
      assert.ok(
        requested.some((u) => u === `${origin}/v1/inventory`),
        'the try-it request went to this service',
      );

      if (process.env.SCREENSHOTS === '1') {
        // The curl line shows the key: even a throwaway key stays out of the repository.
        await page.addStyleTag({ content: '.curl-command { display: none !important; }' });
        // From the top of the page to the end of the live answer.
        // Run in the page (no DOM types here): where the element ends, from the top of the document.
        const bottomOf = (el: unknown) => {
          const box = (el as { getBoundingClientRect(): { bottom: number } }).getBoundingClientRect();
          return box.bottom + (globalThis as unknown as { scrollY: number }).scrollY;
        };
        const bottom = await get.locator('.live-responses-table').first().evaluate(bottomOf);
        await page.screenshot({
          path: join(root, 'docs/images/docs-page.png'),
          fullPage: true,
          clip: { x: 0, y: 0, width: 1280, height: bottom + 16 },
        });
        console.log('wrote docs/images/docs-page.png');
      }
      assert.equal(problems, [], 'no console error');
      const elsewhere = requested.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'));
      assert.equal(elsewhere, [], 'no request leaves this service');
      console.log(
        `docs page in chromium: ${requested.length} requests, all to ${origin} (${[...new Set(requested.map((u) => new URL(u).pathname))].join(', ')}); ` +
          `GET lists ${getCodes.join(' ')}; PATCH lists ${codes.join(' ')}; try it: GET /v1/inventory 200 with pet ${BIG} exact; console errors: ${problems.length}`,
      );
    } finally {
      await browser?.close();
      await service?.stop();
      dir.cleanup();
    }
  },
);

test.run();
