// Recomputes the hash chain over the whole event log, in seq order. It finds the first
// event whose content or link does not match (an edit, a removal, a reordering), a gap
// in seq or a sequence counter above the newest event (every seq is committed in order,
// so either is a removal), and, given digests saved earlier, proves that today's log
// still extends them: rewriting history before that point, even with the chain
// recomputed, or cutting the log short of it, changes or loses the event a digest names.
// The key log (api_key_events) is checked the same way, against its own chain and
// digests, and must account exactly for the api_keys table: a key deleted, recreated
// or back-dated no longer matches its events. What the chain cannot show is checked
// too: each entry's versions run 1, 2, 3, …; each event's actor was a key of the key
// log, not revoked, at the event's time, and one that writes events of that type;
// PostgreSQL's chain heads are at the newest rows. verifyServedState adds what the
// service serves and what guards the tables.
import { eventLeaf, extendTree, nodeId } from '../support/merkle.ts';
import { REQUEST_BUDGET_MS } from './deadline.ts';
import { differingColumns, rebuildProjection, shownEntry } from './rebuild.ts';
import { eventHash, GENESIS_HASH, keyEventHash, type Digest } from '../store/hash-chain.ts';
import type { KeyHistory, AuditReads } from '../store/audit-reads.ts';
import type { ChainRow, EventLog } from '../store/event-log.ts';
import { scopeOf, type KeyScope } from '../store/keys.ts';
import { keyIdOf, publicKeyFromRaw } from '../support/signing.ts';
import type { Projection } from '../store/projection.ts';

export type Verdict =
  | { ok: true; events: number; head: Digest; keyEvents: number; keyHead: Digest; warnings?: string[] }
  /** seq: the first broken event's (of the key log when chain is 'keys'). */
  | { ok: false; events: number; seq: number; reason: string; chain?: 'keys' };

/** Operator actors (`cli:…`) are no API key; every other actor names one. */
const OPERATOR_ACTOR = 'cli:';

interface KeyLifetime {
  created: string;
  revoked?: string;
  /** As its KeyCreated's data says; undefined for data this version does not know. */
  scope: KeyScope | undefined;
}

/** When each key of the key log was created and revoked, and its scope. */
function keyLifetimes(history: KeyHistory): Map<string, KeyLifetime> {
  const lifetimes = new Map<string, KeyLifetime>();
  for (const [, type, name, , recordedAt, , , , data] of history.events) {
    if (type === 'KeyCreated' && !lifetimes.has(name)) lifetimes.set(name, { created: recordedAt, scope: scopeOf(data) });
    const key = lifetimes.get(name);
    if (type === 'KeyRevoked' && key && key.revoked === undefined) key.revoked = recordedAt;
  }
  return lifetimes;
}

/**
 * Why an actor could not have written an event of this type, or undefined when it could:
 * operators' commands (`cli:…`) track pets and set their status, a key's PATCH sets a
 * quantity, and a read-only key writes nothing. scope: the key's, when it is known
 * (through the API alone it is not).
 */
export function eventTypeProblem(actor: string, type: string, scope?: KeyScope | 'unknown'): string | undefined {
  const outside = 'the event was made outside the service';
  if (actor.startsWith(OPERATOR_ACTOR)) {
    return type === 'PetTracked' || type === 'StatusSet'
      ? undefined
      : `its actor "${actor}" is an operator, whose commands write PetTracked and StatusSet, not ${type}: ${outside}`;
  }
  if (scope === 'read-only') return `its actor "${actor}" is a read-only key, which writes nothing: ${outside}`;
  if (scope === 'unknown') return `its actor "${actor}" is a key of a scope this version does not know, which it refuses: ${outside}`;
  return type === 'QuantitySet' ? undefined : `its actor "${actor}" is an API key, whose PATCH writes QuantitySet, not ${type}: ${outside}`;
}

/**
 * How far an event's time may pass its key's revocation, or precede its creation, and
 * still be one the service made: a request authenticated before a revocation may be
 * committed after it (for up to a request's time on the database), and the instances
 * sharing a PostgreSQL database (or an operator's machine) stamp times with their own
 * clocks. Events in that margin are warnings; beyond it, BROKEN. Times are compared as
 * instants (milliseconds): an event at the very instant of a revocation is before it.
 */
export const ACTOR_TIME_MARGIN_MS = REQUEST_BUDGET_MS;

/** Why an event's actor could not have made it ({ broken }), or made it only within the
 * margin ({ warning }); undefined when it could. */
function actorProblem(
  actor: string,
  type: string,
  recordedAt: string,
  keys: ReturnType<typeof keyLifetimes>,
): { broken: string } | { warning: string } | undefined {
  if (actor.startsWith(OPERATOR_ACTOR)) {
    const wrong = eventTypeProblem(actor, type);
    return wrong === undefined ? undefined : { broken: wrong };
  }
  const key = keys.get(actor);
  if (!key) return { broken: `its actor "${actor}" is no key of the key log: the event was made outside the service` };
  const wrong = eventTypeProblem(actor, type, key.scope ?? 'unknown');
  if (wrong) return { broken: wrong };
  const at = Date.parse(recordedAt);
  const early = Date.parse(key.created) - at;
  if (early > ACTOR_TIME_MARGIN_MS)
    return { broken: `its actor "${actor}" became a key only at ${key.created}, after the event (${recordedAt})` };
  const late = key.revoked === undefined ? 0 : at - Date.parse(key.revoked);
  if (late > ACTOR_TIME_MARGIN_MS)
    return { broken: `its actor "${actor}" was revoked at ${key.revoked}, before the event (${recordedAt})` };
  if (early > 0) return { warning: `its actor "${actor}" became a key ${early} ms after it (${key.created})` };
  if (late > 0) return { warning: `its actor "${actor}" was revoked ${late} ms before it (${key.revoked})` };
  return undefined;
}

/** Where the key log's times go backwards (a key event appended with an earlier date,
 * as a back-dated KeyCreated would be, or instances' clocks apart); undefined when they do not. */
function keyLogGoesBack(history: KeyHistory): string | undefined {
  let latest = '';
  for (const [seq, type, name, , recordedAt] of history.events) {
    if (recordedAt < latest) {
      return `the key log's recorded_at goes back in time at key seq ${seq} (${type} of "${name}" at ${recordedAt}, after ${latest}): a back-dated key event, or clocks apart`;
    }
    latest = recordedAt;
  }
  return undefined;
}

type Broken = Extract<Verdict, { ok: false }>;

/** The rows of pages, one at a time. */
async function* each(pages: AsyncIterable<ChainRow[]>): AsyncIterable<ChainRow> {
  for await (const page of pages) yield* page;
}

/** A chain's digests by seq; fails on one that no log can extend. */
function digestsOf(digests: readonly Digest[], chain: 'keys' | undefined): Map<number, string> | string {
  const wanted = new Map<number, string>();
  for (const d of digests.filter((d) => d.chain === chain)) {
    if (d.seq === 0 && d.hash !== GENESIS_HASH) return `seq 0 always has the hash ${GENESIS_HASH}`;
    if (wanted.has(d.seq) && wanted.get(d.seq) !== d.hash) return `two digests name seq ${d.seq} with different hashes`;
    wanted.set(d.seq, d.hash);
  }
  return wanted;
}

/** Walks one chain's links: the checks every chain shares. */
function makeWalk(what: string, wanted: Map<number, string>) {
  let head: Digest = { seq: 0, hash: GENESIS_HASH };
  return {
    get head() {
      return head;
    },
    /** Undefined when the row is a good next link; else why not. */
    step(at: number, prevHash: string | null, hash: string | null, expected: string): { seq: number; reason: string } | undefined {
      if (prevHash !== head.hash) {
        return {
          seq: at,
          reason: `prev_hash does not link to the ${what} before it (seq ${head.seq}): ${what === 'event' ? 'an' : 'a'} ${what} was removed, reordered or changed`,
        };
      }
      if (hash !== expected) return { seq: at, reason: `the hash does not match the row: a field of this ${what} was changed` };
      if (at !== head.seq + 1) {
        const lost = [...wanted.keys()].find((seq) => seq > head.seq && seq < at);
        if (lost !== undefined) return { seq: lost, reason: `the digest's ${what} is missing (seq ${head.seq} is followed by ${at})` };
        const missing = at === head.seq + 2 ? `seq ${head.seq + 1} is` : `seqs ${head.seq + 1} to ${at - 1} are`;
        return { seq: at, reason: `${missing} missing (${what}s are numbered without gaps): ${what}s were removed` };
      }
      const kept = wanted.get(at);
      if (kept !== undefined && kept !== hash) {
        return { seq: at, reason: `the ${what} has hash ${hash}, not the digest's: history up to it was rewritten` };
      }
      head = { seq: at, hash: hash };
      return undefined;
    },
    /** After the last row: the counter and the digests beyond the head. */
    end(counter: number): { seq: number; reason: string } | undefined {
      if (counter > head.seq) {
        return {
          seq: counter,
          reason: `the sequence counter is at ${counter} but the log ends at seq ${head.seq}: the newest ${what}s were cut off`,
        };
      }
      const beyond = Math.max(0, ...wanted.keys());
      if (beyond > head.seq) return { seq: beyond, reason: `the log ends at seq ${head.seq}, before the digest's: it was truncated` };
      return undefined;
    },
  };
}

/** The key log against its chain, its digests, and the api_keys rows it must account for. */
function verifyKeys(history: KeyHistory, wanted: Map<number, string>): { seq: number; reason: string } | Digest {
  const walk = makeWalk('key event', wanted);
  const created = new Map<string, KeyHistory['events'][number]>();
  const revoked = new Map<string, KeyHistory['events'][number]>();
  const signing = new Set<string>();
  const retired = new Set<string>();
  for (const row of history.events) {
    const [seq, type, name, keyHash, recordedAt, actor, prevHash, hash, data] = row;
    const at = Number(seq);
    const broken = walk.step(at, prevHash, hash, keyEventHash({ prevHash, seq, type, name, keyHash, recordedAt, actor, data }));
    if (broken) return broken;
    if (type === 'SigningKeyAdded') {
      const wrong = signingKeyProblem(name, keyHash, signing);
      if (wrong) return { seq: at, reason: wrong };
      signing.add(name);
      continue;
    }
    if (type === 'SigningKeyRetired') {
      if (!signing.has(name)) return { seq: at, reason: `SigningKeyRetired for signing key ${name}, which was not added before it` };
      if (retired.has(name)) return { seq: at, reason: `a second SigningKeyRetired for signing key ${name}` };
      retired.add(name);
      continue;
    }
    const seen = type === 'KeyCreated' ? created : revoked;
    if (seen.has(name)) return { seq: at, reason: `a second ${type} for key "${name}": the key was recreated` };
    if (type === 'KeyRevoked' && created.get(name)?.[3] !== keyHash) {
      return { seq: at, reason: `KeyRevoked for key "${name}", which was not created before it with this hash` };
    }
    seen.set(name, row);
  }
  const end = walk.end(history.counters.keys);
  if (end) return end;
  const rows = new Map(history.keys.map((k) => [k.name, k]));
  for (const [name, [seq, , , keyHash, recordedAt, actor]] of created) {
    const key = rows.get(name);
    const at = Number(seq);
    if (!key) return { seq: at, reason: `key "${name}" is in the key log but not in api_keys: it was deleted` };
    if (key.hash !== keyHash || key.createdAt !== recordedAt || key.createdBy !== actor) {
      return { seq: at, reason: `api_keys row of key "${name}" differs from its KeyCreated event: it was changed or recreated` };
    }
    const revocation = revoked.get(name);
    if (revocation && (key.revokedAt !== revocation[4] || key.revokedBy !== revocation[5])) {
      return {
        seq: Number(revocation[0]),
        reason: `api_keys row of key "${name}" differs from its KeyRevoked event: its revocation was changed`,
      };
    }
    if (!revocation && (key.revokedAt !== null || key.revokedBy !== null)) {
      return { seq: walk.head.seq, reason: `key "${name}" is revoked in api_keys but has no KeyRevoked event` };
    }
  }
  for (const key of history.keys) {
    if (!created.has(key.name)) return { seq: walk.head.seq, reason: `key "${key.name}" of api_keys has no KeyCreated event` };
  }
  return walk.head;
}

/** Why a SigningKeyAdded is not one (its id not its key's, or entered twice), or undefined. */
function signingKeyProblem(keyId: string, publicKey: string, seen: ReadonlySet<string>): string | undefined {
  if (seen.has(keyId)) return `a second SigningKeyAdded for signing key ${keyId}`;
  try {
    publicKeyFromRaw(publicKey);
  } catch {
    return `SigningKeyAdded ${keyId} holds no Ed25519 public key`;
  }
  if (keyIdOf(Buffer.from(publicKey, 'base64url')) !== keyId) return `SigningKeyAdded ${keyId} names another key's id`;
  return undefined;
}

/**
 * The Merkle tree recomputed from the events' hashes as they are read, and compared with
 * the stored nodes a page at a time (each read by key): a stored node that differs, or
 * is missing, is where the tree was edited; nodes past the log's events were added.
 */
function makeTreeCheck(store: Pick<AuditReads, 'treeNodes' | 'treeNodeCount'>) {
  let size = 0;
  let made = 0;
  let frontier = new Map<string, Buffer>();
  let leaves: Buffer[] = [];
  const flush = async (): Promise<{ seq: number; reason: string } | undefined> => {
    if (leaves.length === 0) return undefined;
    const grown = extendTree(size, frontier, leaves);
    const stored = await store.treeNodes(grown.nodes);
    for (const node of grown.nodes) {
      const found = stored.get(nodeId(node.level, node.index));
      if (!found?.equals(node.hash)) {
        const seq = node.index * 2 ** node.level + 2 ** node.level;
        return {
          seq,
          reason:
            `the Merkle tree's node at level ${node.level}, index ${node.index} (up to seq ${seq}) is ` +
            `${found ? `${found.toString('base64')}, not ${node.hash.toString('base64')} as the events give` : 'missing'}: the tree (tree_nodes) was edited`,
        };
      }
    }
    made += grown.nodes.length;
    size += leaves.length;
    frontier = grown.frontier;
    leaves = [];
    return undefined;
  };
  return {
    async add(hash: string | null) {
      leaves.push(eventLeaf(hash ?? ''));
      return leaves.length >= TREE_PAGE ? flush() : undefined;
    },
    async end(): Promise<{ seq: number; reason: string } | undefined> {
      const broken = await flush();
      if (broken) return broken;
      const count = await store.treeNodeCount();
      if (count === made) return undefined;
      return {
        seq: size,
        reason: `the Merkle tree holds ${count} nodes where the log's ${size} events make ${made}: nodes were added to tree_nodes`,
      };
    },
  };
}

/** How many of the tree's leaves are checked against the stored nodes at once. */
const TREE_PAGE = 1000;

export async function verifyLog(
  store: Pick<EventLog, 'chainRows'> & Pick<AuditReads, 'keyHistory' | 'treeNodes' | 'treeNodeCount'>,
  digest?: Digest | readonly Digest[],
): Promise<Verdict> {
  const digests = digest === undefined ? [] : Array.isArray(digest) ? (digest as readonly Digest[]) : [digest as Digest];
  let events = 0;
  const wanted = digestsOf(digests, undefined);
  if (typeof wanted === 'string') return { ok: false, events, seq: 0, reason: wanted };
  const wantedKeys = digestsOf(digests, 'keys');
  if (typeof wantedKeys === 'string') return { ok: false, events, seq: 0, reason: wantedKeys, chain: 'keys' };
  // Read before the events: a counter read first is never above events appended since.
  const history = await store.keyHistory();
  // The key log first: the events' actors are checked against it.
  const keys = verifyKeys(history, wantedKeys);
  if ('reason' in keys) return { ok: false, events, ...keys, chain: 'keys' };
  const lifetimes = keyLifetimes(history);
  const keyClockBack = keyLogGoesBack(history);
  const walk = makeWalk('event', wanted);
  const fail = (broken: { seq: number; reason: string }): Broken => ({ ok: false, events, ...broken });
  // The newest version of each entry so far (by petId's decimal text).
  const versions = new Map<string, number>();
  let latest = '';
  let clockBack: { seq: number; at: string; after: string } | undefined;
  let clockBacks = 0;
  // Events within the margin of their actor's revocation or creation.
  let nearActor: { seq: number; reason: string } | undefined;
  let nearActors = 0;
  const tree = makeTreeCheck(store);
  for await (const [seq, petId, version, type, data, actor, requestId, recordedAt, prevHash, hash] of each(store.chainRows())) {
    events++;
    const at = Number(seq);
    const broken = walk.step(
      at,
      prevHash,
      hash,
      eventHash({ prevHash: prevHash ?? '', seq, petId, version, type, data, actor, requestId, recordedAt }),
    );
    if (broken) return fail(broken);
    const treeBroken = await tree.add(hash);
    if (treeBroken) return fail(treeBroken);
    const pet = String(petId);
    const before = versions.get(pet) ?? 0;
    if (Number(version) !== before + 1) {
      return fail({
        seq: at,
        reason: `entry ${pet} has version ${version} after ${before === 0 ? 'none' : `version ${before}`}: an entry's versions are 1, 2, 3, …, so events of it were removed or made outside the service`,
      });
    }
    versions.set(pet, before + 1);
    const problem = actorProblem(actor, type, recordedAt, lifetimes);
    if (problem && 'broken' in problem) return fail({ seq: at, reason: problem.broken });
    if (problem) {
      nearActor ??= { seq: at, reason: problem.warning };
      nearActors++;
    }
    if (recordedAt < latest) {
      clockBacks++;
      clockBack ??= { seq: at, at: recordedAt, after: latest };
    } else latest = recordedAt;
  }
  const end = walk.end(history.counters.events);
  if (end) return fail(end);
  const treeEnd = await tree.end();
  if (treeEnd) return fail(treeEnd);
  // Both fields: a head moved back with its hash kept would make the next append reuse a seq.
  if (history.headHashes && (history.counters.events !== walk.head.seq || history.headHashes.events !== walk.head.hash)) {
    return fail({
      seq: walk.head.seq,
      reason: `chain_head (seq ${history.counters.events}) is not at the newest event (seq ${walk.head.seq}): its seq or hash is not that event's, so rows were added past the chain's head or the head was moved`,
    });
  }
  if (history.headHashes && (history.counters.keys !== keys.seq || history.headHashes.keys !== keys.hash)) {
    return {
      ...fail({ seq: keys.seq, reason: `key_chain_head (seq ${history.counters.keys}) is not at the newest key event (seq ${keys.seq})` }),
      chain: 'keys',
    };
  }
  const warnings = [
    ...(clockBack
      ? [
          `recorded_at goes back in time ${clockBacks === 1 ? 'once' : `${clockBacks} times`}, first at seq ${clockBack.seq} ` +
            `(${clockBack.at}, after ${clockBack.after}): a clock set back, or events made outside the service`,
        ]
      : []),
    ...(keyClockBack ? [keyClockBack] : []),
    ...(nearActor
      ? [
          `${nearActors === 1 ? 'an event' : `${nearActors} events`} within ${ACTOR_TIME_MARGIN_MS / 1000} s of ` +
            `${nearActors === 1 ? 'its' : 'their'} actor's revocation or creation, first seq ${nearActor.seq}: ${nearActor.reason} ` +
            `(a request authenticated before a revocation, or clocks apart; beyond ${ACTOR_TIME_MARGIN_MS / 1000} s it is BROKEN)`,
        ]
      : []),
  ];
  return {
    ok: true,
    events,
    head: walk.head,
    keyEvents: history.events.length,
    keyHead: { ...keys, chain: 'keys' },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/**
 * What the chains cannot show: that the projection the service serves is the replay of
 * the log (an edited inventory row makes GET lie), and that the triggers guarding the
 * tables are all there. Undefined when both hold; otherwise why not.
 */
export async function verifyServedState(
  store: Pick<AuditReads, 'snapshot' | 'missingGuards'> & Pick<Projection, 'replaceProjection'>,
): Promise<string | undefined> {
  const missing = await store.missingGuards();
  if (missing.length > 0) {
    return `the append-only trigger${missing.length === 1 ? '' : 's'} ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing or disabled: the tables were left open to edits`;
  }
  const { differences } = await rebuildProjection(store, { check: true });
  if (differences.length === 0) return undefined;
  const { petId, before, after } = differences[0]!;
  const differing = before && after ? differingColumns(before, after) : [];
  const columns = differing.length > 0 ? ` (${differing.join(', ')} ${differing.length === 1 ? 'differs' : 'differ'})` : '';
  return (
    `the projection (inventory) differs from the replay of the log in ${differences.length} ${differences.length === 1 ? 'entry' : 'entries'}: ` +
    `entry ${petId} has ${shownEntry(before, after, 'status ')} where the log gives ${shownEntry(after, before, 'status ')}${columns} (scripts/rebuild-projection --check lists them)`
  );
}

/** How the command names where a verdict broke: `seq N` or `key seq N`. */
export function brokenAt(verdict: Broken): string {
  return `${verdict.chain === 'keys' ? 'key seq' : 'seq'} ${verdict.seq}`;
}
