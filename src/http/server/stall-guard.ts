// Bounds what clients that do not read their responses can pin. A response the client
// does not take stays in this process: the socket's write buffer holds it, and
// pipelined requests that Node parsed from the same chunk have their whole responses
// queued behind it (ServerResponse output not yet given to the socket). A large body
// goes out in slices that are views of it (sliced-response.ts): until its last slice is
// out, a response keeps the whole body in memory, but the answers that send one body
// (the list, to every reader until it changes) keep it once between them, and it counts
// once. Each response not yet closed also holds its request, response and context
// objects, which count too: a client can pipeline hundreds of requests in one write.
// Node stops reading a socket whose output waits, but nothing ever frees what it holds.
//
// Every check interval, and at once whenever a response leaves a large output waiting
// on its socket (OUTPUT_WAITING), the guard measures what each connection pins and
// whether it took any byte since the last measure. A connection with output waiting that
// took nothing for stallTimeoutMs is destroyed; and when all connections with output
// waiting together pin more than maxPinnedBytes, those stalled longest (nothing taken
// since the last measure, oldest clock first, those that may free a body before those
// whose bodies a reader still holds) are destroyed until the total fits, a shared body
// leaving the total with the last connection that holds it. Fresh output
// counts toward the total from the moment it is queued: were it counted only at the
// once-a-second check, a service rendering a large list every few milliseconds for
// clients that never read would pin a second's worth of lists above the cap. Any byte a
// reader takes resets its clock, so a slow reader is not cut by the stall time, and is
// the last to go for the cap; output that just arrived is never cut for the cap.
//
// What the guard sees of a slow reader comes in bursts: the kernel wakes a writer only
// once a good part of its send buffer (up to 4 MB) is free again, so a client reading
// 100 KB/s shows progress every few seconds. The stall time must be well above that.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { OUTPUT_WAITING, sharedBody } from './sliced-response.ts';

interface StallLimits {
  /** A connection with output waiting that takes no byte of it for this long is closed. */
  stallTimeoutMs: number;
  /** The most that connections with output waiting may pin together. */
  maxPinnedBytes: number;
  /** How often connections are measured. */
  checkIntervalMs: number;
}

interface StallReport {
  /** Connections closed because they took nothing for stallTimeoutMs. */
  stalled: number;
  /** Connections closed, oldest stall first, to bring the total under maxPinnedBytes. */
  overCap: number;
  /** What connections with output waiting still pin. */
  pinnedBytes: number;
}

/** A connection's responses not yet closed, in order (pipelined ones queue behind the first). */
export type ResponsesOf = (socket: Socket) => readonly ServerResponse[];

interface Connection {
  socket: Socket;
  /** Bytes whose writes completed (monotonic) when last measured. */
  completed: number;
  /** libuv's queue of the write in flight: it shrinks as the kernel takes bytes. */
  queued: number;
  /** Whether it had output waiting when last measured. */
  waiting: boolean;
  /** When the connection last had nothing waiting or took a byte. */
  since: number;
}

// The bytes of the write in flight that libuv has not yet handed to the kernel. A
// single large write (a whole 5 MB body) completes only at its end, so this is the one
// sign that a slow reader is reading. Node's own socket timeout watches the same field.
function unsentOfWriteInFlight(socket: Socket): number {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: unknown } })._handle;
  return typeof handle?.writeQueueSize === 'number' ? handle.writeQueueSize : 0;
}

/** What a connection holds for its client: bytes of its own, and the bodies it shares. */
interface Pinned {
  /** Its socket's buffer and its queued responses' output, but for views of shared bodies. */
  own: number;
  /** The bodies its responses are sending a slice at a time (sliced-response.ts). */
  bodies: Buffer[];
  /** What its responses not yet closed hold besides their output. */
  objects: number;
}

/** What a response not yet closed holds besides its output: its request, its response
 * and Koa's context, their headers and closures (measured with pipelined GETs left
 * unread: docs/design.md). A client pipelining hundreds of requests it never reads
 * pins that for each, whatever the bytes of the answers. */
const RESPONSE_OBJECTS_BYTES = 8 * 1024;

const NO_BODIES: Buffer[] = [];

function pinnedBy(c: Connection, responsesOf: ResponsesOf): Pinned {
  let own = c.socket.writableLength;
  let bodies = NO_BODIES;
  const responses = responsesOf(c.socket);
  for (const res of responses) {
    // writableLength of a response counts its socket's buffer too once it has one.
    own += res.writableLength - (res.socket === c.socket ? c.socket.writableLength : 0);
    const shared = sharedBody(res);
    if (shared) {
      own -= shared.inBuffers;
      bodies = bodies === NO_BODIES ? [shared.body] : [...bodies, shared.body];
    }
  }
  return { own: Math.max(0, own), bodies, objects: responses.length * RESPONSE_OBJECTS_BYTES };
}

/** What the connections measured pin together, each shared body once. */
function makeTotal() {
  const readers = new Map<Buffer, number>();
  let bytes = 0;
  const change = ({ own, bodies, objects }: Pinned, by: 1 | -1) => {
    bytes += by * (own + objects);
    for (const body of bodies) {
      const count = (readers.get(body) ?? 0) + by;
      // A body counts while one connection still holds it, with all of the memory it is
      // a view of (a list is rendered into a buffer with room to spare).
      if (count === 0 || (count === 1 && by === 1)) bytes += by * body.buffer.byteLength;
      readers.set(body, count);
    }
  };
  return { add: (p: Pinned) => change(p, 1), remove: (p: Pinned) => change(p, -1), bytes: () => bytes };
}

/** Measures each connection: closes those that took nothing for stallTimeoutMs, then,
 * while the total is over maxPinnedBytes, those stalled longest. */
function closeStalled(connections: Iterable<Connection>, responsesOf: ResponsesOf, limits: StallLimits, at: number): StallReport {
  const report: StallReport = { stalled: 0, overCap: 0, pinnedBytes: 0 };
  const total = makeTotal();
  const waiting: { c: Connection; pinned: Pinned }[] = [];
  // The bodies that connections not stalled hold: closing a stalled one frees none of them.
  const kept = new Set<Buffer>();
  for (const c of connections) {
    const { socket } = c;
    if (socket.destroyed) continue;
    const pinned = pinnedBy(c, responsesOf);
    if (!tookNothing(c, pinned)) {
      c.since = at;
      total.add(pinned);
      for (const body of pinned.bodies) kept.add(body);
      continue;
    }
    if (at - c.since >= limits.stallTimeoutMs) {
      socket.destroy();
      report.stalled++;
      continue;
    }
    waiting.push({ c, pinned });
    total.add(pinned);
  }
  if (total.bytes() > limits.maxPinnedBytes) {
    // Those that may free a body go first (a reader still reading the list keeps it in
    // memory, whoever else is closed), then the rest; the longest stalled first in each.
    const freesNoBody = ({ pinned }: { pinned: Pinned }) => (pinned.bodies.every((body) => kept.has(body)) ? 1 : 0);
    waiting.sort((a, b) => freesNoBody(a) - freesNoBody(b) || a.c.since - b.c.since);
    for (const { c, pinned } of waiting) {
      if (total.bytes() <= limits.maxPinnedBytes) break;
      c.socket.destroy();
      report.overCap++;
      total.remove(pinned);
    }
  }
  report.pinnedBytes = total.bytes();
  return report;
}

/** Records what the connection pins now and how far its writes went; whether it has
 * output waiting that took no byte since the last measure. */
function tookNothing(c: Connection, { own, bodies }: Pinned): boolean {
  const waiting = own > 0 || bodies.length > 0;
  const completed = c.socket.bytesWritten - c.socket.writableLength;
  const queued = unsentOfWriteInFlight(c.socket);
  // While a write is in flight no other starts, so with no completed write a
  // smaller libuv queue can only mean the kernel took bytes. Output that was not
  // there at the last measure is judged at the next one, not at this.
  const progressed = !c.waiting || completed > c.completed || (completed === c.completed && queued < c.queued);
  c.completed = completed;
  c.queued = queued;
  c.waiting = waiting;
  return waiting && !progressed;
}

/** The guard's time: the clock its stall times are read on, and the timer that runs its
 * periodic check (every intervalMs until what it returns is called). A test passes its
 * own to move time and run checks itself. */
export interface GuardTiming {
  now?: () => number;
  every?: (intervalMs: number, check: () => void) => () => void;
}

const everyInterval: NonNullable<GuardTiming['every']> = (intervalMs, check) => {
  // Unref'd: the guard never keeps the process alive.
  const timer = setInterval(check, intervalMs).unref();
  return () => clearInterval(timer);
};

/** responsesOf: each connection's responses not yet closed (the server keeps them). */
export function guardStalls(
  server: Server,
  limits: StallLimits,
  deps: { responsesOf: ResponsesOf; onClosed?: (report: StallReport) => void } & GuardTiming,
): { check(): StallReport } {
  const { now = Date.now, every = everyInterval } = deps;
  const connections = new Map<Socket, Connection>();

  let soon: NodeJS.Immediate | undefined;
  const checkSoon = () => {
    soon ??= setImmediate(() => {
      soon = undefined;
      check();
    });
  };
  server.on('connection', (socket: Socket) => {
    const c: Connection = { socket, completed: 0, queued: 0, waiting: false, since: now() };
    connections.set(socket, c);
    socket.once('close', () => connections.delete(socket));
    // Fresh output is measured as soon as it is large (see the top of this file).
    socket.on(OUTPUT_WAITING, checkSoon);
  });

  function check(): StallReport {
    const report = closeStalled(connections.values(), deps.responsesOf, limits, now());
    if (report.stalled + report.overCap > 0) deps.onClosed?.(report);
    return report;
  }

  let stop: (() => void) | undefined;
  server.on('listening', () => {
    stop?.();
    stop = every(limits.checkIntervalMs, check);
  });
  server.on('close', () => {
    stop?.();
    if (soon) clearImmediate(soon);
  });
  return { check };
}
