// The access line is put together by the service itself, not by pino's walk over the
// fields: it must be, byte for byte, the line pino writes for the same fields, with the
// same logger's timestamp and bindings, and nothing while the level keeps info lines out.
import type { ServerResponse } from 'node:http';
import pino from 'pino';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { accessLog } from '../../src/http/stages/access-log.ts';

const lines = suite('access log lines');

function recording() {
  const written: string[] = [];
  return { written, stream: { write: (line: string) => void written.push(line) } };
}

/** A response as the line reads it once it has closed. */
function closed(status: number, sent = true, finished = sent): ServerResponse {
  return { headersSent: sent, statusCode: status, writableFinished: finished } as unknown as ServerResponse;
}

const TIME = ',"time":"2026-11-29T00:00:00.000Z"';
const CASES = [
  {
    name: 'a GET',
    res: closed(200),
    line: { requestId: 'b02beebf-2874-4e46-a241-bf8eb9a996ba', actor: 'bench', method: 'GET', path: '/v1/inventory' },
  },
  { name: 'no actor (no key)', res: closed(401), line: { requestId: 'r-1', actor: undefined, method: 'PATCH', path: '/v1/inventory/7' } },
  { name: 'a client that went away', res: closed(200, false), line: { requestId: 'r.2', actor: 'ops', method: 'GET', path: '/v1/events' } },
  {
    name: 'sent but not finished',
    res: closed(200, true, false),
    line: { requestId: 'r:3', actor: 'ops', method: 'GET', path: '/v1/inventory' },
  },
  // Each alone in its string: a line that escapes one of them wrongly differs from pino's.
  { name: 'a quote', res: closed(404), line: { requestId: 'r-5', actor: 'a "b"', method: 'GET', path: '/v1/"q"' } },
  { name: 'a backslash', res: closed(404), line: { requestId: 'r-6', actor: 'a\\b', method: 'GET', path: '/v1/\\' } },
  { name: 'DEL', res: closed(404), line: { requestId: 'r-7', actor: 'a\u007fb', method: 'GET', path: '/v1/\u007f' } },
  { name: 'a control character', res: closed(404), line: { requestId: 'r-8', actor: 'a\tb', method: 'GET', path: '/v1/\u0001' } },
  { name: 'beyond ASCII', res: closed(404), line: { requestId: 'r-9', actor: 'caf\u00e9', method: 'GET', path: '/v1/\u2028' } },
  {
    name: 'characters a path or a key name may hold',
    res: closed(404),
    line: { requestId: 'r-4', actor: 'say "hi"\\ \u00e9', method: 'OTHER', path: '/v1/"q"/\\/\u0001/\u007f/caf\u00e9/\u00ff/\u2028' },
  },
];

/** The line pino writes for the fields access lines hold, and ours, with one logger. */
function both(logger: pino.Logger, written: string[], c: (typeof CASES)[number]) {
  // performance.now() is read by each: the duration is the one field that may differ.
  const started = performance.now();
  accessLog(logger)(c.res, started, c.line);
  const ours = JSON.parse(written.at(-1)!) as { durationMs: number };
  const status = c.res.headersSent ? c.res.statusCode : null;
  logger.info({ ...c.line, status, durationMs: ours.durationMs, ...(c.res.writableFinished ? {} : { aborted: true }) });
  return { ours: written.at(-2)!, pinos: written.at(-1)! };
}

lines('each line is the one pino writes for its fields', () => {
  const { written, stream } = recording();
  const logger = pino({ base: undefined, timestamp: () => TIME }, stream);
  for (const c of CASES) {
    const { ours, pinos } = both(logger, written, c);
    assert.is(ours, pinos, c.name);
    assert.ok(ours.endsWith('}\n'), c.name);
  }
  assert.is(written.length, CASES.length * 2);
});

lines("a child logger's bindings come first, as pino puts them", () => {
  const { written, stream } = recording();
  const logger = pino({ base: undefined, timestamp: () => TIME }, stream).child({ component: 'http', shard: 2 });
  const { ours, pinos } = both(logger, written, CASES[0]!);
  assert.is(ours, pinos);
  assert.ok(ours.startsWith(`{"level":30${TIME},"component":"http","shard":2,"requestId":`), ours);
});

lines("a stream that takes each line's level (multistream) gets the line from pino", () => {
  const { written, stream } = recording();
  const logger = pino({ base: undefined, timestamp: () => TIME }, pino.multistream([{ stream, level: 'info' }]));
  const { ours, pinos } = both(logger, written, CASES[1]!);
  assert.is(ours, pinos);
});

lines('nothing is written while the level keeps info lines out', () => {
  const { written, stream } = recording();
  const logger = pino({ level: 'warn', base: undefined }, stream);
  const log = accessLog(logger);
  log(closed(200), performance.now(), CASES[0]!.line);
  assert.equal(written, []);
  logger.level = 'info';
  log(closed(200), performance.now(), CASES[0]!.line);
  assert.is(written.length, 1, 'a level changed at run time is heard');
});

lines.run();
