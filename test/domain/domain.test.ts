// The business rules as given events / when command / then events, and evolve.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeEvent, encodeData } from '../../src/domain/codec.ts';
import { decide, type Command } from '../../src/domain/decide.ts';
import { parsePetId, type DomainEvent, type EntryState } from '../../src/domain/events.ts';
import { evolve } from '../../src/domain/evolve.ts';
import type { Refusal } from '../../src/domain/refusals.ts';

const given = (...events: DomainEvent[]): EntryState | undefined => events.reduce<EntryState | undefined>(evolve, undefined);
const tracked: DomainEvent = { type: 'PetTracked', data: { quantity: 3, status: 'available' } };
const decided = (...events: DomainEvent[]) => ({ kind: 'decided', events });
const refused = (refusal: Refusal) => ({ kind: 'refused', refusal });

const rules = suite('decide');

rules('TrackPet on a new pet: PetTracked', () => {
  const command: Command = { type: 'TrackPet', petId: 1n, quantity: 3, status: 'available' };
  assert.equal(decide(command, given()), decided(tracked));
});

rules('TrackPet on a tracked pet is refused', () => {
  const command: Command = { type: 'TrackPet', petId: 1n, quantity: 0, status: 'sold' };
  assert.equal(decide(command, given(tracked)), refused({ reason: 'already_tracked', petId: 1n }));
});

rules('SetQuantity on a tracked pet: QuantitySet, also when the quantity is the same', () => {
  assert.equal(
    decide({ type: 'SetQuantity', petId: 1n, quantity: 9 }, given(tracked)),
    decided({ type: 'QuantitySet', data: { quantity: 9 } }),
  );
  assert.equal(
    decide({ type: 'SetQuantity', petId: 1n, quantity: 3 }, given(tracked)),
    decided({ type: 'QuantitySet', data: { quantity: 3 } }),
  );
});

rules('SetQuantity on an untracked pet is refused', () => {
  assert.equal(decide({ type: 'SetQuantity', petId: 1n, quantity: 9 }, given()), refused({ reason: 'not_tracked', petId: 1n }));
});

rules('SetQuantity with a precondition: refused unless the version satisfies it', () => {
  const state = given(tracked, { type: 'QuantitySet', data: { quantity: 4 } });
  const at = (v: number) => (version: number) => (version === v ? undefined : 'if-match-failed');
  assert.equal(
    decide({ type: 'SetQuantity', petId: 1n, quantity: 5, precondition: at(2) }, state),
    decided({ type: 'QuantitySet', data: { quantity: 5 } }),
  );
  assert.equal(
    decide({ type: 'SetQuantity', petId: 1n, quantity: 5, precondition: at(1) }, state),
    refused({ reason: 'precondition_failed', petId: 1n, currentVersion: 2, failed: 'if-match-failed' }),
  );
  // Not tracked beats a failed precondition (404 before 412).
  assert.equal(
    decide({ type: 'SetQuantity', petId: 1n, quantity: 5, precondition: at(1) }, given()),
    refused({ reason: 'not_tracked', petId: 1n }),
  );
});

rules('SetStatus: StatusSet on a tracked pet, refused on an untracked one', () => {
  assert.equal(
    decide({ type: 'SetStatus', petId: 1n, status: 'sold' }, given(tracked)),
    decided({ type: 'StatusSet', data: { status: 'sold' } }),
  );
  assert.equal(decide({ type: 'SetStatus', petId: 1n, status: 'sold' }, given()), refused({ reason: 'not_tracked', petId: 1n }));
});

rules('every refusal is returned, never thrown; only a fault is thrown', () => {
  const at1 = (version: number) => (version === 1 ? undefined : 'if-none-match-failed');
  const refusals: [Command, EntryState | undefined][] = [
    [{ type: 'TrackPet', petId: 7n, quantity: 0, status: 'available' }, given(tracked)],
    [{ type: 'SetQuantity', petId: 7n, quantity: 1 }, given()],
    [{ type: 'SetQuantity', petId: 7n, quantity: 1, precondition: at1 }, given(tracked, { type: 'QuantitySet', data: { quantity: 4 } })],
    [{ type: 'SetStatus', petId: 7n, status: 'sold' }, given()],
  ];
  for (const [command, state] of refusals) {
    let decision: ReturnType<typeof decide> | undefined;
    assert.not.throws(() => (decision = decide(command, state)), command.type);
    assert.is(decision?.kind, 'refused', command.type);
  }
  // A command this code does not know is a bug: thrown, not a refusal.
  assert.throws(() => decide({ type: 'Unknown', petId: 7n } as unknown as Command, given(tracked)), /unknown command/);
});

rules.run();

const folding = suite('evolve');

folding('quantity and status change independently; the version counts the events', () => {
  const state = given(
    tracked,
    { type: 'QuantitySet', data: { quantity: 8 } },
    { type: 'StatusSet', data: { status: 'pending' } },
    { type: 'QuantitySet', data: { quantity: 8 } },
  );
  assert.equal(state, { quantity: 8, status: 'pending', version: 4 });
});

folding('an event for an entry never tracked is an error, not a silent entry', () => {
  assert.throws(() => given({ type: 'QuantitySet', data: { quantity: 1 } }), /never tracked/);
});

folding.run();

const codec = suite('event data codec');

codec('data carries the members at the top level and a schemaVersion; decoding round-trips', () => {
  const events: DomainEvent[] = [tracked, { type: 'QuantitySet', data: { quantity: 7 } }, { type: 'StatusSet', data: { status: 'sold' } }];
  for (const event of events) {
    const data = encodeData(event);
    assert.equal(JSON.parse(data), { ...event.data, schemaVersion: 1 });
    assert.equal(decodeEvent(event.type, data), event);
  }
});

codec('the fast path for QuantitySet agrees with the general one, and refuses what it refuses', () => {
  for (const q of [0, 7, 10, 2147483647]) {
    assert.equal(decodeEvent('QuantitySet', `{"quantity":${q},"schemaVersion":1}`), { type: 'QuantitySet', data: { quantity: q } });
    // Other spellings of the same JSON take the general path to the same event.
    assert.equal(decodeEvent('QuantitySet', `{ "schemaVersion": 1, "quantity": ${q} }`), { type: 'QuantitySet', data: { quantity: q } });
  }
  for (const bad of ['2147483648', '-1', '01', '1.5', '', '"7"', '99999999999']) {
    assert.throws(() => decodeEvent('QuantitySet', `{"quantity":${bad},"schemaVersion":1}`), undefined, bad);
  }
});

codec('unknown schema versions and invalid data are refused, not guessed', () => {
  assert.throws(() => decodeEvent('QuantitySet', '{"quantity":1,"schemaVersion":2}'), /schemaVersion/);
  assert.throws(() => decodeEvent('QuantitySet', '{"quantity":-1,"schemaVersion":1}'), /quantity/);
  assert.throws(() => decodeEvent('StatusSet', '{"status":"lost","schemaVersion":1}'), /status/);
});

codec.run();

const ids = suite('parsePetId');

ids('canonical digits from 1 to int64 max, exact', () => {
  assert.is(parsePetId('1'), 1n);
  assert.is(parsePetId('9223372036854775807'), 9223372036854775807n);
  assert.is(parsePetId('9007199254740993'), 9007199254740993n);
  for (const bad of ['', '0', '007', '-3', '+7', '1.5', '1e3', ' 7', '7 ', 'abc', '9223372036854775808', '10000000000000000000']) {
    assert.is(parsePetId(bad), undefined, bad);
  }
});

ids.run();
