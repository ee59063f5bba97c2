// The service's log lines reach standard output in blocks: none is lost, none reordered,
// a partial block goes out when flushed, and a block is handed to the writer whole.
import { once } from 'node:events';
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
  return {
    writes,
    calls,
    write(text: string) {
      writes.push(text);
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

blocks('lines wait until a block is full, then go out as one write, in order', () => {
  const writer = recordingWriter();
  const dest = inBlocks(writer, 100);
  const line = (i: number) => `{"n":${String(i).padStart(3, '0')},"pad":"${'x'.repeat(14)}"}\n`; // 30 characters
  for (let i = 0; i < 3; i++) dest.write(line(i));
  assert.equal(writer.writes, [], 'three lines of 30 are under the block of 100');
  dest.write(line(3));
  assert.equal(writer.writes, [line(0) + line(1) + line(2) + line(3)], 'the fourth line fills the block: one write of all four');
  dest.write(line(4));
  assert.is(writer.writes.length, 1, 'the next block has started');
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
    const writer = pino.destination({ dest: file, sync: false });
    // A file is opened asynchronously (standard output, the service's, is open already).
    await once(writer, 'ready');
    const dest = inBlocks(writer, 4096);
    const logger = pino({ base: undefined, timestamp: false }, dest);
    for (let i = 0; i < 5000; i++) logger.info({ i, path: `/v1/inventory/${i}` });
    // The partial block is handed over; sonic-boom ends once its writes are done. (Not
    // flushSync here: while one of its asynchronous writes is under way, sonic-boom's
    // flushSync writes what waits behind it first.)
    dest.flush();
    writer.end();
    await once(writer, 'close');
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.is(lines.length, 5000);
    lines.forEach((text, i) => assert.equal(JSON.parse(text), { level: 30, i, path: `/v1/inventory/${i}` }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

blocks.run();
