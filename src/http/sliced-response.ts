// A response that hands a large body to its socket a slice at a time: the next slice in
// the next turn of the event loop, or once the socket has taken the last. One rendered
// list is the body of many answers at once (the list cache shares one Buffer). Ended
// whole, each answer's first write copies as much of it into the kernel as the socket's
// buffers take, and all those answers are ended in the same turn, which then holds every
// other request until the copying is done. A slice per socket per turn, each turn copies
// little and the others, /healthz among them, are served in between. The slices are
// views of the one body, never copies. What a response has not yet handed over still
// counts as what its connection pins (unsentBytes), for the stall guard, which
// OUTPUT_WAITING tells to look.
import { ServerResponse, type IncomingMessage } from 'node:http';

/** Bodies larger than this go out a slice of this size at a time. */
const SLICE_BYTES = 64 * 1024;
/** Emitted by a response that has started to send a large body a slice at a time, or
 * whose end left more than LARGE_OUTPUT bytes waiting (on its socket, or queued behind a
 * pipelined answer): the stall guard then measures at once. Small answers leave nothing
 * waiting and emit nothing. */
export const OUTPUT_WAITING = 'output-waiting';
const LARGE_OUTPUT = 64 * 1024;

const unsent = new WeakMap<ServerResponse, number>();

/** The bytes of this response's body not yet handed to its socket (or queued behind it). */
export function unsentBytes(res: ServerResponse): number {
  return unsent.get(res) ?? 0;
}

export class SlicedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override end(...args: unknown[]): this {
    const [body, ...rest] = args;
    // A callback or an encoding after the body, or a small body: as Node does it.
    if (!Buffer.isBuffer(body) || body.length <= SLICE_BYTES || rest.length > 0) {
      (super.end as (...a: unknown[]) => this)(...args);
      // writableLength counts the socket's buffer once the response has one.
      if (this.writableLength > LARGE_OUTPUT) this.emit(OUTPUT_WAITING);
      return this;
    }
    let offset = 0;
    // One slice per socket per turn of the event loop. A write the kernel takes at once
    // completes (and drains) in a nextTick, which runs before the loop goes on: going on
    // from there, a socket with room for the whole body (a fast local reader) would be
    // handed all of it before any other request is read.
    const later = () => setImmediate(next);
    const next = () => {
      if (this.destroyed) return;
      const slice = body.subarray(offset, offset + SLICE_BYTES);
      offset += slice.length;
      unsent.set(this, body.length - offset);
      if (offset >= body.length) super.end(slice);
      else if (this.write(slice)) later();
      else this.once('drain', later);
    };
    next();
    this.emit(OUTPUT_WAITING);
    return this;
  }
}
