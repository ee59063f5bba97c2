// The service's log lines reach standard output in blocks: none is lost, none reordered,
// a partial block goes out when flushed, and a block is handed to the writer whole.
import { EventEmitter, once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { inBlocks } from '../../src/support/logger.ts';

const blocks = suite('log lines in blocks');

function recordingWriter() {
  const writes: string[] = [];
  const calls: string[] = [];
  const closed = new EventEmitter();
  return {
    writes,
    calls,
    end() {
      calls.push('end');
      // sonic-boom closes once its writes are done: later, not within end().
      setImmediate(() => closed.emit('close'));
    },
    once(event: 'close' | 'error', listener: () => void) {
      closed.once(event, listener);
    },
    /** A failed write: sonic-boom emits 'error' and never closes. */
    fail() {
      closed.emit('error', new Error('EPIPE'));
    },
    write(block: Buffer) {
      writes.push(block.toString('utf8'));
      calls.push('write');
      return true;
    },
    flush(cb?: (err?: Error) => void) {
      calls.push('flush');
      cb?.();
    },
    flushSync() {
      calls.push('flushSync');
    },
  };
}

blocks('lines wait while the next may fit, then go out as one write, in order', () => {
  const writer = recordingWriter();
  const dest = inBlocks(writer, 200);
  const line = (i: number) => `{"n":${String(i).padStart(3, '0')},"pad":"${'x'.repeat(14)}"}\n`; // 30 characters
  // A line of 30 characters may take 90 bytes: four fit in 200 (the fourth at 90-180).
  for (let i = 0; i < 4; i++) dest.write(line(i));
  assert.equal(writer.writes, [], 'four lines of 30 wait in the block of 200');
  dest.write(line(4));
  assert.equal(writer.writes, [line(0) + line(1) + line(2) + line(3)], 'the fifth might not fit: one write of the four before it');
  dest.flushSync();
  assert.equal(writer.writes.at(-1), line(4), 'the fifth began the next block');
});

blocks('lines are written as UTF-8, and a line longer than a block goes on its own, in its place', () => {
  const writer = recordingWriter();
  const dest = inBlocks(writer, 64);
  const wide = '{"path":"/caf\u00e9/\u{1F408}/\u2028"}\n';
  dest.write(wide);
  const long = `{"pad":"${'\u00e9'.repeat(40)}"}\n`;
  dest.write(long);
  dest.write('{"last":1}\n');
  dest.flushSync();
  assert.equal(writer.writes, [wide, long, '{"last":1}\n']);
  assert.is(Buffer.byteLength(writer.writes[1]!), long.length + 40, 'each \u00e9 is two bytes');
});

blocks('flush and flushSync hand over a partial block before the writer flushes', () => {
  const writer = recordingWriter();
  const dest = inBlocks(writer, 1000);
  dest.write('a\n');
  dest.write('b\n');
  let flushed = false;
  dest.flush(() => (flushed = true));
  assert.equal(writer.writes, ['a\nb\n']);
  assert.equal(writer.calls, ['write', 'flush']);
  assert.ok(flushed, "the caller's callback is the writer's");
  dest.flush();
  assert.equal(writer.writes, ['a\nb\n'], 'nothing pending: no empty write');
  dest.write('c\n');
  dest.flushSync();
  assert.equal(writer.writes, ['a\nb\n', 'c\n']);
  assert.equal(writer.calls.slice(-2), ['write', 'flushSync']);
});

blocks('through pino and sonic-boom to a file: every line, in order, once the writes end', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'log-blocks-'));
  try {
    const file = join(dir, 'out.log');
    const writer = pino.destination({ dest: file, sync: false, contentMode: 'buffer' });
    // A file is opened asynchronously (standard output, the service's, is open already).
    await once(writer, 'ready');
    const dest = inBlocks(writer as unknown as Parameters<typeof inBlocks>[0], 4096);
    const logger = pino({ base: undefined, timestamp: false }, dest);
    // Some lines with characters of two, three and four bytes.
    const path = (i: number) => (i % 7 === 0 ? `/caf\u00e9/\u20ac/\u{1F408}/${i}` : `/v1/inventory/${i}`);
    for (let i = 0; i < 5000; i++) logger.info({ i, path: path(i) });
    // The partial block is handed over; sonic-boom ends once its writes are done. (Not
    // flushSync here: while one of its asynchronous writes is under way, sonic-boom's
    // flushSync writes what waits behind it first.)
    await new Promise<void>((resolve) => dest.end(resolve));
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.is(lines.length, 5000);
    lines.forEach((text, i) => assert.equal(JSON.parse(text), { level: 30, i, path: path(i) }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

blocks('end hands over the partial block, is done once the writer closes, and takes no line after it', async () => {
  const writer = recordingWriter();
  const dest = inBlocks(writer, 1000);
  dest.write('a\n');
  let done = false;
  const ended = new Promise<void>((resolve) =>
    dest.end(() => {
      done = true;
      resolve();
    }),
  );
  assert.equal(writer.writes, ['a\n'], 'the partial block, handed over before the end');
  assert.equal(writer.calls, ['write', 'end']);
  assert.not.ok(done, 'not done before the writer closed');
  await ended;
  assert.is(dest.write('late\n'), false, 'a line after the end is refused');
  dest.flushSync();
  dest.flush();
  assert.equal(writer.writes, ['a\n'], 'nothing is written after the end');
  assert.equal(writer.calls, ['write', 'end'], 'flush and flushSync after the end touch no closed writer');
  let again = false;
  dest.end(() => (again = true));
  assert.ok(again, 'a second end is done at once');
});

blocks('end is done when the writer fails instead of closing, once', async () => {
  const writer = recordingWriter();
  const dest = inBlocks(writer, 1000);
  let done = 0;
  dest.end(() => done++);
  writer.fail();
  assert.is(done, 1, 'a failed write ends the wait');
  // The recording writer closes after its end all the same.
  await new Promise((r) => setImmediate(r));
  assert.is(done, 1, 'a close after the failure does not end it twice');
});

blocks.run();
