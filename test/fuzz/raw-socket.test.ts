// Property (fast-check) of hostile input; see setup.ts for what every property checks.
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { type Outcome, checkAnswer, checkState, report, runtime, snapshot, tally } from './checks.ts';
import { exchange } from './client.ts';
import { rawBytes, rawCaseArb } from './raw-cases.ts';
import { STALL_MS, fuzzSuite, runs } from './setup.ts';
const http = fuzzSuite('fuzz: raw bytes on a socket');

http('raw bytes on a socket: odd methods, targets, versions, header lines and framing still get the Error shape', async ({ t }) => {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(rawCaseArb, async (c) => {
      const before = await snapshot(t);
      const rt = runtime(t, before);
      const bytes = rawBytes(c, rt);
      const label = JSON.stringify(bytes.toString('latin1').slice(0, 300));
      const result = await exchange(t.port, bytes, c.halfClose, c.method === 'HEAD');
      const codings = [...bytes.toString('latin1').matchAll(/^transfer-encoding:([^\r\n]*)/gim)].flatMap((m) => m[1]!.split(','));
      const codingRefused = codings.some((coding) => coding.trim().toLowerCase() !== 'chunked');
      const exempt = c.method === 'PRI' && c.version === '' ? 'NODE-PRI-HTTP09' : undefined;
      assert.not.ok(result.timedOut && result.answers.length === 0, `${label}: an answer within ${STALL_MS} ms`);
      // NODE-PRI-HTTP09: the app answers `PRI /x` (an HTTP/0.9 line with HTTP/2's preface
      // method) but node:http drops the answer, with or without the app's clientError handler.
      if (exempt !== 'NODE-PRI-HTTP09') assert.ok(result.answers.length > 0, `${label}: an answer`);
      let accepted: Outcome | undefined;
      result.answers.forEach((answer, i) => {
        tally(seen, answer.status);
        const outcome: Outcome = {
          method: i === 0 ? c.method : '',
          status: answer.status,
          contentType: answer.headers.get('content-type'),
          text: answer.body.toString('utf8'),
          etag: answer.headers.get('etag'),
          ms: i === 0 ? (result.firstMs ?? Infinity) : 0,
        };
        checkAnswer(outcome, t.key, `${label} (answer ${i + 1})`, i === 0 && codingRefused);
        if (answer.status >= 200 && answer.status < 300 && c.method === 'PATCH') {
          assert.is(i, 0, `${label}: only the request sent can be accepted`);
          accepted = outcome;
        }
      });
      await checkState(t, before, accepted, label);
    }),
    runs(800),
  );
  report('raw bytes', seen);
  for (const status of [200, 400, 401]) assert.ok(seen.has(status), `some answer was ${status}`);
});

http.run();
