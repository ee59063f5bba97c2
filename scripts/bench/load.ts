// The load generator of npm run bench, run as a process of its own so that it does not
// share an event loop with what it measures. autocannon, 127.0.0.1 only, for a fixed
// time. Prints autocannon's result as JSON on standard output.
//   load.ts URL MODE SECONDS CONNECTIONS KEY PETS [PAIRS] [RATE]
//   MODE: get (GET /v1/inventory), patch (PATCH a random pet), mix (90% get, 10% patch),
//         get-cors (GET /v1/inventory with the Origin a browser front end sends, BENCH_ORIGIN),
//         pairs (PATCH a random pet, then GET the whole list, PAIRS times in all, or until
//         SECONDS have passed: a user who looks at the list after each change),
//         patch-keyed (PATCH a random pet with a fresh Idempotency-Key on each request),
//         healthz (GET /healthz, 100 a second: a probe beside another load),
//         metrics (GET /metrics once a second: a Prometheus scrape beside another load)
//   RATE: requests a second in all, the connections sharing them (0: as fast as answered)
import { randomUUID } from 'node:crypto';
import autocannon, { type Request } from 'autocannon';
import { BENCH_ORIGIN } from './harness.ts';

const MODES = ['get', 'get-cors', 'patch', 'patch-keyed', 'mix', 'pairs', 'healthz', 'metrics'];
const [url, mode, seconds, connections, key, pets, pairs, rate] = process.argv.slice(2);
if (!url || !MODES.includes(mode ?? '') || !new URL(url).hostname.startsWith('127.')) {
  process.stderr.write(`usage: load.ts http://127.0.0.1:PORT ${MODES.join('|')} SECONDS CONNECTIONS KEY PETS [PAIRS] [RATE]\n`);
  process.exit(2);
}
const petCount = Number(pets);
// Each method its own headers: a GET that inherits a PATCH's framing is not valid HTTP.
const getHeaders = mode === 'get-cors' ? { authorization: `Bearer ${key}`, origin: BENCH_ORIGIN } : { authorization: `Bearer ${key}` };
const patchHeaders = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

const probe = mode === 'healthz' || mode === 'metrics';
function patchRequest(request: Request): Request {
  const petId = 1 + Math.floor(Math.random() * petCount);
  const body = JSON.stringify({ quantity: Math.floor(Math.random() * 1000) });
  const headers = mode === 'patch-keyed' ? { ...patchHeaders, 'idempotency-key': randomUUID() } : patchHeaders;
  return { ...request, method: 'PATCH', path: `/v1/inventory/${petId}`, headers, body };
}
const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  ...(probe ? { overallRate: mode === 'healthz' ? 100 : 1 } : Number(rate) > 0 ? { overallRate: Number(rate) } : {}),
  // Each connection sends the requests below in turn: for pairs, a PATCH then a GET.
  ...(mode === 'pairs' ? { amount: 2 * Number(pairs) } : {}),
  requests: [
    ...(mode === 'pairs' ? [{ setupRequest: patchRequest }] : []),
    {
      setupRequest: (request: Request): Request => {
        if (probe) return { ...request, method: 'GET', path: `/${mode}`, headers: {}, body: undefined };
        const patch = mode === 'patch' || mode === 'patch-keyed' || (mode === 'mix' && Math.random() < 0.1);
        if (!patch) return { ...request, method: 'GET', path: '/v1/inventory', headers: getHeaders, body: undefined };
        return patchRequest(request);
      },
    },
  ],
});
process.stdout.write(`${JSON.stringify(result)}\n`);
