// Property (fast-check) of hostile input; see setup.ts for what every property checks.
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { checkAnswer, checkState, entries, report, runtime, snapshot, tally } from './checks.ts';
import { timedSend } from './client.ts';
import { EXPECTED, buildPatch, patchCaseArb } from './patch-cases.ts';
import { fuzzSuite, runs } from './setup.ts';
const http = fuzzSuite('fuzz: near-valid PATCHes');

http('near-valid PATCHes with chosen faults: the answer of the first fault in the fixed order, or 200 and one event', async ({ t }) => {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(patchCaseArb, async (c) => {
      const before = await snapshot(t);
      const built = buildPatch(c, runtime(t, before));
      fc.pre(built !== undefined);
      const { request, petId, expect } = built;
      const label = `${request.method} ${request.path.slice(0, 80)} [${Object.keys(c.faults).join(',') || 'valid'}]`;
      const outcome = await timedSend(t.port, request);
      tally(seen, outcome.status);
      checkAnswer(outcome, t.key, label);
      if (expect === undefined) {
        assert.is(outcome.status, 200, `${label}: accepted (${outcome.text})`);
        const status = entries(before.inventory).get(petId)!.status;
        assert.is(outcome.text, `{"petId":${petId},"quantity":${c.valid.quantity},"status":"${status}"}`, label);
      } else {
        const [status, codes] = EXPECTED[expect];
        assert.is(outcome.status, status, `${label}: ${expect} answers ${status} (${outcome.text})`);
        if (outcome.method !== 'HEAD') {
          const code = (JSON.parse(outcome.text) as { code: string }).code;
          assert.ok(codes.includes(code), `${label}: code ${code} is one of ${codes.join(', ')}`);
        }
      }
      await checkState(t, before, outcome.status === 200 ? outcome : undefined, label);
    }),
    runs(1200),
  );
  report('near-valid PATCHes', seen);
  for (const status of [200, 400, 401, 404, 405, 412, 413, 415]) assert.ok(seen.has(status), `some answer was ${status}`);
});

http.run();
