// Errors cross the thread boundary as plain data: structured cloning keeps an Error's
// message but drops its code (SQLITE_BUSY, SQLITE_FULL, …), which decides the answer.
import { KeyNameTaken } from '../keys.ts';
import { CommitUnconfirmed, VersionConflict, type UnconfirmedBatch } from '../event-log.ts';
import { DeadlinePassed, StoreUnavailable } from '../health.ts';
import { SigningKeyRefused } from '../signing-keys.ts';

export interface WireError {
  name: string;
  message: string;
  code?: string;
  petId?: bigint;
  expected?: number;
  actual?: number;
  keyName?: string;
  batch?: UnconfirmedBatch;
}

export function toWire(error: unknown): WireError {
  const e = error as Partial<WireError> & { keyName?: string };
  return {
    name: String(e?.name ?? 'Error'),
    message: String(e?.message ?? error),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(error instanceof VersionConflict ? { petId: error.petId, expected: error.expected, actual: error.actual } : {}),
    ...(error instanceof KeyNameTaken ? { keyName: error.keyName } : {}),
    ...(error instanceof CommitUnconfirmed ? { batch: error.batch } : {}),
  };
}

export function fromWire(wire: WireError): Error {
  if (wire.name === 'VersionConflict') return new VersionConflict(wire.petId!, wire.expected!, wire.actual);
  if (wire.name === 'KeyNameTaken') return new KeyNameTaken(wire.keyName!);
  if (wire.name === 'StoreUnavailable') return new StoreUnavailable(wire.message);
  if (wire.name === 'DeadlinePassed') return new DeadlinePassed(wire.message);
  if (wire.name === 'SigningKeyRefused') return new SigningKeyRefused(wire.message);
  if (wire.name === 'CommitUnconfirmed') return new CommitUnconfirmed(wire.batch ?? {}, { cause: new Error(wire.message) });
  const error = new Error(wire.message) as Error & { code?: string };
  error.name = wire.name;
  if (wire.code !== undefined) error.code = wire.code;
  return error;
}
