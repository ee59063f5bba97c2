// A strict JSON reader (RFC 8259) for text whose every detail matters: JSON.parse keeps
// the last of two members with one name and rounds numbers to doubles, so
// {"petId":20,"petId":21} would pass as 21 and 2147483647.0000001 as 2147483647. This
// reader refuses a repeated member and keeps each number's literal text, for
// ./json-number.ts to judge as written. PATCH bodies and scripts/track files both read
// their JSON here, so the two cannot judge the same text differently.
//
// It is iterative (an explicit stack), so a file nested a million levels deep is an
// error message, not a stack overflow.

export type JsonNode =
  | { kind: 'null' }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'string'; value: string }
  /** The number exactly as written, such as "5.0" or "9223372036854775807". */
  | { kind: 'number'; literal: string }
  | { kind: 'array'; items: JsonNode[] }
  /** Members in the order written; a Map, so "__proto__" is a name like any other. */
  | { kind: 'object'; members: Map<string, JsonNode> };

type StrictJsonResult =
  | { ok: true; value: JsonNode }
  /** Not JSON at all; reason says what and where (line and column, from 1). */
  | { ok: false; problem: 'malformed'; reason: string }
  /** One object names a member twice: the first such name, and where it comes again. */
  | { ok: false; problem: 'duplicate'; member: string; at: string };

class Stop extends Error {
  constructor(readonly result: StrictJsonResult & { ok: false }) {
    super('stop');
  }
}

type Open = { node: JsonNode & { kind: 'array' } } | { node: JsonNode & { kind: 'object' }; key: string };

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

/** The reader's place in the text, and the reads of one token at it. */
class Cursor {
  constructor(
    readonly text: string,
    public i: number,
  ) {}

  fail(what: string): never {
    throw new Stop({ ok: false, problem: 'malformed', reason: `${what} at ${where(this.text, this.i)}` });
  }

  skipWhitespace(): void {
    WHITESPACE.lastIndex = this.i;
    WHITESPACE.exec(this.text);
    this.i = WHITESPACE.lastIndex;
  }

  readString(): string {
    const { text } = this;
    const start = this.i;
    let end = start + 1;
    while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
    if (end >= text.length) this.fail('a string that never ends');
    try {
      // JSON.parse of the one string checks its escapes and control characters exactly.
      const value = JSON.parse(text.slice(start, end + 1)) as string;
      this.i = end + 1;
      return value;
    } catch {
      return this.fail('a string with a raw control character or a bad escape');
    }
  }

  /** A member's name and its colon; a name the object has already is a duplicate. */
  readKey(object: JsonNode & { kind: 'object' }): string {
    this.skipWhitespace();
    if (this.text[this.i] !== '"') this.fail(`expected a member name in double quotes, found ${found(this.text, this.i)}`);
    const start = this.i;
    const key = this.readString();
    if (object.members.has(key)) throw new Stop({ ok: false, problem: 'duplicate', member: key, at: where(this.text, start) });
    this.skipWhitespace();
    if (this.text[this.i] !== ':') this.fail(`expected ":" after a member name, found ${found(this.text, this.i)}`);
    this.i++;
    return key;
  }

  /** A string, a number, true, false or null. */
  readScalar(): JsonNode {
    const { text } = this;
    const c = text[this.i];
    if (c === '"') return { kind: 'string', value: this.readString() };
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      NUMBER.lastIndex = this.i;
      const literal = NUMBER.exec(text)?.[0];
      if (literal === undefined) return this.fail(`a malformed number`);
      this.i += literal.length;
      return { kind: 'number', literal };
    }
    if (text.startsWith('true', this.i) || text.startsWith('false', this.i) || text.startsWith('null', this.i)) {
      const word = text.startsWith('null', this.i) ? 'null' : text.startsWith('true', this.i) ? 'true' : 'false';
      this.i += word.length;
      return word === 'null' ? { kind: 'null' } : { kind: 'boolean', value: word === 'true' };
    }
    return this.fail(`expected a value, found ${found(text, this.i)}`);
  }
}

/** At "{" or "[": an empty container's value, or undefined once a non-empty one is left open on the stack. */
function openContainer(at: Cursor, stack: Open[]): JsonNode | undefined {
  const object = at.text[at.i] === '{';
  at.i++;
  at.skipWhitespace();
  const node: JsonNode = object ? { kind: 'object', members: new Map() } : { kind: 'array', items: [] };
  if (at.text[at.i] === (object ? '}' : ']')) {
    at.i++;
    return node;
  }
  stack.push(node.kind === 'object' ? { node, key: at.readKey(node) } : { node });
  return undefined;
}

/** Hands a complete value to the open containers, closing those that end here: the
 * document's value once none is left open, or undefined when another value is due. */
function closeContainers(at: Cursor, stack: Open[], value: JsonNode): JsonNode | undefined {
  for (;;) {
    const top = stack.at(-1);
    at.skipWhitespace();
    if (top === undefined) {
      if (at.i < at.text.length) at.fail(`unexpected ${found(at.text, at.i)} after the JSON value`);
      return value;
    }
    if (top.node.kind === 'array') top.node.items.push(value);
    else top.node.members.set((top as { key: string }).key, value);
    const close = top.node.kind === 'array' ? ']' : '}';
    if (at.text[at.i] === ',') {
      at.i++;
      if (top.node.kind === 'object') (top as { key: string }).key = at.readKey(top.node);
      return undefined;
    }
    if (at.text[at.i] !== close) at.fail(`expected "," or "${close}", found ${found(at.text, at.i)}`);
    at.i++;
    stack.pop();
    value = top.node;
  }
}

export function readStrictJson(text: string, options: { byteOrderMark?: boolean } = {}): StrictJsonResult {
  // RFC 8259 section 8.1: a parser may ignore a byte order mark. A caller that decoded
  // the bytes itself (and dropped one there) passes byteOrderMark: false, so that a
  // second one is not JSON, as JSON.parse says.
  const at = new Cursor(text, options.byteOrderMark !== false && text.charCodeAt(0) === 0xfeff ? 1 : 0);
  const stack: Open[] = [];
  try {
    for (;;) {
      at.skipWhitespace();
      const c = text[at.i];
      const value = c === '{' || c === '[' ? openContainer(at, stack) : at.readScalar();
      if (value === undefined) continue;
      const document = closeContainers(at, stack, value);
      if (document !== undefined) return { ok: true, value: document };
    }
  } catch (err) {
    if (err instanceof Stop) return err.result;
    throw err;
  }
}

/** The first member name that one object of the text repeats; undefined if none (or not JSON). */
export function duplicateMember(text: string): string | undefined {
  const result = readStrictJson(text);
  return !result.ok && result.problem === 'duplicate' ? result.member : undefined;
}

function found(text: string, i: number): string {
  if (i >= text.length) return 'the end of the text';
  const c = text.codePointAt(i)!;
  return c < 0x20 || c === 0x7f
    ? `the control character U+${c.toString(16).toUpperCase().padStart(4, '0')}`
    : JSON.stringify(String.fromCodePoint(c));
}

function where(text: string, i: number): string {
  let line = 1;
  let lineStart = 0;
  for (let k = text.indexOf('\n'); k !== -1 && k < i; k = text.indexOf('\n', k + 1)) {
    line++;
    lineStart = k + 1;
  }
  return `line ${line}, column ${i - lineStart + 1}`;
}
