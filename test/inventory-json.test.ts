// The list body is written in 64 KiB chunks: whatever the size, it must be exactly the
// JSON a naive rendering gives, ids above 2^53 included.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { PetStatus } from '../src/domain/events.ts';
import { renderInventory } from '../src/http/inventory-json.ts';

const render = suite('renderInventory');

render('equals a naive rendering across chunk boundaries; the tag follows versions', () => {
  for (const count of [0, 1, 1200, 5000]) {
    const rows: [bigint, number, PetStatus, number][] = Array.from({ length: count }, (_, i) => [
      9223372036854775807n - BigInt(count - i),
      (i * 7919) % 2147483648,
      (['available', 'pending', 'sold'] as const)[i % 3]!,
      1 + (i % 5),
    ]);
    const naive = `[${rows.map(([p, q, s]) => `{"petId":${p},"quantity":${q},"status":"${s}"}`).join(',')}]`;
    const { body, etag } = renderInventory(rows);
    assert.is(body.toString('latin1'), naive, `${count} rows`);
    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    if (count > 0) {
      const bumped = rows.map(([p, q, s, v], i): [bigint, number, PetStatus, number] => [p, q, s, i === 0 ? v + 1 : v]);
      assert.is.not(renderInventory(bumped).etag, etag, 'a version change changes the tag');
    }
  }
});

render.run();
