// The change feed's cursors, on every store: a seq or the digest SEQ:HASH, in after and in
// Last-Event-ID; streams send the digest as id and no event name, Link carries it; a
// cursor past the head or not in this log is 409, naming the head, on pages and streams.
// Also which Accept asks for the stream.
import { request } from 'node:http';
import * as assert from 'uvu/assert';
import { eventHash, GENESIS_HASH } from '../../src/store/hash-chain.ts';
import { ajv, doc } from '../kit/openapi-document.ts';
import { assertErrorShape } from '../kit/http.ts';
import { parseEvents, parseEvent, seed, stream, seqsBeforeMarker } from '../kit/feed.ts';
import { appSuite } from '../kit/suites.ts';

const test = appSuite('the change feed: cursors');

const SSE = { Accept: 'text/event-stream' };

test('streams: each message is an id (the digest) and data, no event name; the digest resumes', async ({ t }) => {
  await seed(t, 2, 3);
  const table = await t.events();
  const s = await stream(t);
  await s.waitFor(table.length);
  assert.equal(
    s.messages.map((m) => [m.event, m.id]),
    table.map((e) => ['message', `${e.seq}:${e.hash}`]),
  );
  for (const m of s.messages) assert.is(m.id, `${parseEvent(m.data).seq}:${parseEvent(m.data).hash}`);
  s.close();
  const at = table[2]!;
  const resumed = await stream(t, '?after=0', { 'Last-Event-ID': `${at.seq}:${at.hash}` });
  assert.equal(
    await seqsBeforeMarker(t, resumed, table.length - 3),
    table.slice(3).map((e) => e.seq),
  );
  resumed.close();
  // An empty Last-Event-ID is no cursor at all (an EventSource with no id yet): after counts.
  const now = (await t.events()).map((e) => e.seq);
  const empty = await stream(t, `?after=${at.seq}:${at.hash}`, { 'Last-Event-ID': '' });
  assert.equal(await seqsBeforeMarker(t, empty, now.length - 3), now.slice(3));
  empty.close();
});

test('pages: a digest as after, Link with the digest, 0 and 0:GENESIS from the first; Last-Event-ID is ignored', async ({ t }) => {
  await seed(t, 2, 3);
  const table = await t.events();
  const at = table[1]!;
  const page = await t.get(`/v1/events?after=${at.seq}:${at.hash}&limit=2`);
  assert.is(page.status, 200, page.text);
  assert.equal(
    parseEvents(page.text).map((e) => BigInt(e.seq)),
    [table[2]!.seq, table[3]!.seq],
  );
  assert.is(page.headers.link, `</v1/events?after=${table[3]!.seq}:${table[3]!.hash}&limit=2>; rel="next"`);
  for (const after of ['0', `0:${GENESIS_HASH}`]) {
    const first = await t.get(`/v1/events?after=${after}&limit=1`);
    assert.is(first.status, 200, first.text);
    assert.is(parseEvents(first.text)[0]!.seq, String(table[0]!.seq));
  }
  const empty = await t.get('/v1/events?after=0&limit=1', { 'Last-Event-ID': 'not a cursor' });
  assert.is(empty.status, 200, 'Last-Event-ID belongs to streams: a page goes by after');
  assert.is(parseEvents(empty.text)[0]!.seq, String(table[0]!.seq));
  assertErrorShape(await t.get('/v1/events?after=01'), 400, 'bad_request', 'a seq has no leading zero');
  assertErrorShape(await t.get(`/v1/events?after=1:${'A'.repeat(64)}`), 400, 'bad_request', 'hashes are lower-case hex');
});

test('a cursor past the head is 409 cursor_past_head, naming the head; then nothing is skipped', async ({ t }) => {
  await seed(t, 2, 3);
  const table = await t.events();
  const head = table[table.length - 1]!;
  const digest = `${head.seq}:${head.hash}`;
  const past = head.seq + 5n;
  for (const [label, res] of [
    ['after', await t.get(`/v1/events?after=${past}`)],
    ['after, a digest', await t.get(`/v1/events?after=${past}:${head.hash}`)],
    ['a stream', await t.get(`/v1/events?after=${past}`, SSE)],
    ['Last-Event-ID', await t.get('/v1/events', { ...SSE, 'Last-Event-ID': '9223372036854775807' })],
  ] as const) {
    const body = assertErrorShape(res, 409, 'cursor_past_head', label);
    assert.ok(body.message.includes(digest), `${label}: the message names the head (${body.message})`);
  }
  assert.is(t.feed.size(), 0, 'no stream was opened');
  // Written after: a consumer at the head gets them, none was promised away.
  for (let i = 0; i < 6; i++) assert.is((await t.patch(1, { quantity: 50 + i })).status, 200);
  const after = await t.get(`/v1/events?after=${digest}`);
  assert.is(parseEvents(after.text).length, 6);
});

test('a digest whose hash is not the event at its seq is 409 cursor_not_in_log, naming the head', async ({ t }) => {
  await seed(t, 2, 3);
  const table = await t.events();
  const head = table[table.length - 1]!;
  const other = 'f'.repeat(64);
  for (const [label, res] of [
    ['after', await t.get(`/v1/events?after=${table[2]!.seq}:${other}`)],
    ['after 0', await t.get(`/v1/events?after=0:${other}`)],
    ['the head', await t.get(`/v1/events?after=${head.seq}:${table[0]!.hash}`)],
    ['a stream', await t.get(`/v1/events?after=${table[2]!.seq}:${other}`, SSE)],
    ['Last-Event-ID', await t.get('/v1/events', { ...SSE, 'Last-Event-ID': `${table[2]!.seq}:${other}` })],
  ] as const) {
    const body = assertErrorShape(res, 409, 'cursor_not_in_log', label);
    assert.ok(body.message.includes(`${head.seq}:${head.hash}`), `${label}: the message names the head (${body.message})`);
  }
  assert.is(t.feed.size(), 0, 'no stream was opened');
});

test('Accept: the stream for text/event-stream with parameters and for text/*; JSON for */*, ties and lower q', async ({ t }) => {
  await seed(t, 1, 1);
  for (const accept of [
    'text/event-stream',
    'text/event-stream; charset=utf-8',
    'TEXT/Event-Stream;charset="utf-8"',
    'text/*',
    'application/json;q=0.5, text/event-stream',
  ]) {
    const s = await stream(t, '', { Accept: accept });
    assert.is(s.status, 200, accept);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/, accept);
    s.close();
  }
  for (const accept of [
    '*/*',
    'application/json',
    'text/event-stream;q=0.5, application/json',
    'application/*, text/*',
    'text/event-stream;q=0',
  ]) {
    const res = await t.get('/v1/events', { Accept: accept });
    assert.is(res.status, 200, accept);
    assert.match(String(res.headers['content-type']), /^application\/json/, accept);
  }
});

test("the document's stream example is a stream as the service sends it: retry first, then a FeedEvent by its digest", async ({ t }) => {
  await seed(t, 1, 1);
  type Example = { get: { responses: Record<string, { content: Record<string, { example: string }> }> } };
  const example = (doc as { paths: Record<string, Example> }).paths['/events']!.get.responses['200']!.content['text/event-stream']!.example;
  const sent = await new Promise<string>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: t.port, path: '/v1/events', headers: { ...SSE, Authorization: `Bearer ${t.key}` }, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
          if (text.split('\n\n').length > 2) {
            req.destroy();
            resolve(text);
          }
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
  const [retry, message] = example.split('\n\n');
  assert.is(`${retry}\n\n`, sent.slice(0, sent.indexOf('\n\n') + 2), 'the retry block the service sends first');
  const [idLine, dataLine, ...more] = message!.split('\n');
  assert.equal(more, []);
  assert.match(sent.split('\n\n')[1]!, /^id: \d+:[0-9a-f]{64}\ndata: \{/);
  const event = parseEvent(dataLine!.slice('data: '.length));
  const validate = ajv.getSchema('openapi#/components/schemas/FeedEvent')!;
  assert.ok(validate(JSON.parse(dataLine!.slice('data: '.length))), JSON.stringify(validate.errors));
  assert.is(idLine, `id: ${event.seq}:${event.hash}`);
  assert.is(eventHash({ ...event, seq: BigInt(event.seq), petId: BigInt(event.petId), data: JSON.stringify(event.data) }), event.hash);
});

test.run();
