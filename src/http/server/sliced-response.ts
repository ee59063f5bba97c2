// A response that hands a large body to its socket a slice at a time: the next slice in
// the next turn of the event loop, or once the socket has taken the last. One rendered
// list is the body of many answers at once (the list cache shares one Buffer). Ended
// whole, each answer's first write copies as much of it into the kernel as the socket's
// buffers take, and all those answers are ended in the same turn, which then holds every
// other request until the copying is done. A slice per socket per turn, each turn copies
// little and the others, /healthz among them, are served in between. The slices are
// views of the one body, never copies: however many answers send it, the body is in
// memory once, and the stall guard, which OUTPUT_WAITING tells to look, counts it once
// (sharedBody).
import { ServerResponse, type IncomingMessage } from 'node:http';

/** Bodies larger than this go out a slice of this size at a time. */
const SLICE_BYTES = 64 * 1024;
/** Emitted on the connection's socket for a response that has started to send a large
 * body a slice at a time, or whose end left more than LARGE_OUTPUT bytes waiting (on its
 * socket, or queued behind a pipelined answer): the stall guard, which listens once per
 * connection, then measures at once. Small answers leave nothing waiting and emit nothing. */
export const OUTPUT_WAITING = 'output-waiting';
const LARGE_OUTPUT = 64 * 1024;

/** The body a response is sending a slice at a time, until its last slice is flushed. */
export interface SharedBody {
  /** The whole body: a view of it keeps all of it in memory, and other answers may share it. */
  body: Buffer;
  /** The bytes of its slices now in the response's or its socket's buffers (or being
   * written): views of the body, which the buffers' byte counts include. */
  inBuffers: number;
}

const sending = new WeakMap<ServerResponse, SharedBody>();

/** The body this response is still sending a slice at a time, if it is. */
export function sharedBody(res: ServerResponse): SharedBody | undefined {
  return sending.get(res);
}

export class SlicedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override end(...args: unknown[]): this {
    const [body, ...rest] = args;
    // A callback or an encoding after the body, or a small body: as Node does it.
    if (!Buffer.isBuffer(body) || body.length <= SLICE_BYTES || rest.length > 0) {
      (super.end as (...a: unknown[]) => this)(...args);
      // writableLength counts the socket's buffer once the response has one.
      if (this.writableLength > LARGE_OUTPUT) this.req.socket.emit(OUTPUT_WAITING);
      return this;
    }
    let offset = 0;
    const shared: SharedBody = { body, inBuffers: 0 };
    sending.set(this, shared);
    // The last slice is flushed when the response finishes; each other one, when its
    // write's callback runs.
    this.once('finish', () => sending.delete(this));
    // One slice per socket per turn of the event loop. A write the kernel takes at once
    // completes (and drains) in a nextTick, which runs before the loop goes on: going on
    // from there, a socket with room for the whole body (a fast local reader) would be
    // handed all of it before any other request is read.
    const later = () => setImmediate(next);
    const next = () => {
      if (this.destroyed) return;
      const slice = body.subarray(offset, offset + SLICE_BYTES);
      offset += slice.length;
      shared.inBuffers += slice.length;
      if (offset >= body.length) super.end(slice);
      else if (this.write(slice, () => (shared.inBuffers -= slice.length))) later();
      else this.once('drain', later);
    };
    next();
    this.req.socket.emit(OUTPUT_WAITING);
    return this;
  }
}
