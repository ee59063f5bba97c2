// Property (fast-check) of hostile input; see setup.ts for what every property checks.
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { checkAnswer, checkState, report, runtime, snapshot, tally } from './checks.ts';
import { timedSend } from './client.ts';
import { httpCaseArb, toRequest } from './http-cases.ts';
import { fuzzSuite, runs } from './setup.ts';
const http = fuzzSuite('fuzz: random requests through node:http');

http('random requests through node:http: an answer within 2 s, never a 5xx, the Error shape, no change on a refusal', async ({ t }) => {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(httpCaseArb, async (c) => {
      const before = await snapshot(t);
      const request = toRequest(c, runtime(t, before));
      fc.pre(request !== undefined);
      const label = `${c.method} ${c.path.slice(0, 120)}`;
      const outcome = await timedSend(t.port, request);
      tally(seen, outcome.status);
      checkAnswer(outcome, t.key, label);
      const accepted = outcome.method === 'PATCH' && outcome.status >= 200 && outcome.status < 300 ? outcome : undefined;
      await checkState(t, before, accepted, label);
    }),
    runs(1500),
  );
  report('random requests', seen);
  // The generator gets past the key often enough to reach the deeper layers.
  for (const status of [200, 400, 401, 404, 405, 413, 415]) assert.ok(seen.has(status), `some answer was ${status}`);
});

http.run();
