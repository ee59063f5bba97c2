// The messages between the service's event loop and its writer thread.
import type { WireError } from '../errors.ts';
import type { WriterOperation } from './writer.ts';

type Op = WriterOperation | 'close';

export interface Request {
  id: number;
  op: Op;
  args: unknown[];
}

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };
