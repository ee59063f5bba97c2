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

export function readStrictJson(text: string, options: { byteOrderMark?: boolean } = {}): StrictJsonResult {
  // RFC 8259 section 8.1: a parser may ignore a byte order mark. A caller that decoded
  // the bytes itself (and dropped one there) passes byteOrderMark: false, so that a
  // second one is not JSON, as JSON.parse says.
  let i = options.byteOrderMark !== false && text.charCodeAt(0) === 0xfeff ? 1 : 0;

  const fail = (what: string): never => {
    throw new Stop({ ok: false, problem: 'malformed', reason: `${what} at ${where(text, i)}` });
  };
  const skipWhitespace = () => {
    WHITESPACE.lastIndex = i;
    WHITESPACE.exec(text);
    i = WHITESPACE.lastIndex;
  };
  const readString = (): string => {
    const start = i;
    let end = i + 1;
    while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
    if (end >= text.length) fail('a string that never ends');
    try {
      // JSON.parse of the one string checks its escapes and control characters exactly.
      const value = JSON.parse(text.slice(start, end + 1)) as string;
      i = end + 1;
      return value;
    } catch {
      return fail('a string with a raw control character or a bad escape');
    }
  };
  const readKey = (object: JsonNode & { kind: 'object' }): string => {
    skipWhitespace();
    if (text[i] !== '"') fail(`expected a member name in double quotes, found ${found(text, i)}`);
    const start = i;
    const key = readString();
    if (object.members.has(key)) throw new Stop({ ok: false, problem: 'duplicate', member: key, at: where(text, start) });
    skipWhitespace();
    if (text[i] !== ':') fail(`expected ":" after a member name, found ${found(text, i)}`);
    i++;
    return key;
  };

  const stack: Open[] = [];
  try {
    for (;;) {
      skipWhitespace();
      let value: JsonNode;
      const c = text[i];
      if (c === '{') {
        i++;
        skipWhitespace();
        const node: JsonNode & { kind: 'object' } = { kind: 'object', members: new Map() };
        if (text[i] !== '}') {
          stack.push({ node, key: readKey(node) });
          continue;
        }
        i++;
        value = node;
      } else if (c === '[') {
        i++;
        skipWhitespace();
        const node: JsonNode & { kind: 'array' } = { kind: 'array', items: [] };
        if (text[i] !== ']') {
          stack.push({ node });
          continue;
        }
        i++;
        value = node;
      } else if (c === '"') {
        value = { kind: 'string', value: readString() };
      } else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
        NUMBER.lastIndex = i;
        const literal = NUMBER.exec(text)?.[0];
        if (literal === undefined) return fail(`a malformed number`);
        i += literal.length;
        value = { kind: 'number', literal };
      } else if (text.startsWith('true', i) || text.startsWith('false', i) || text.startsWith('null', i)) {
        const word = text.startsWith('null', i) ? 'null' : text.startsWith('true', i) ? 'true' : 'false';
        i += word.length;
        value = word === 'null' ? { kind: 'null' } : { kind: 'boolean', value: word === 'true' };
      } else {
        return fail(`expected a value, found ${found(text, i)}`);
      }

      // The value is complete: hand it to the open containers, closing those that end here.
      for (;;) {
        const top = stack.at(-1);
        skipWhitespace();
        if (top === undefined) {
          if (i < text.length) fail(`unexpected ${found(text, i)} after the JSON value`);
          return { ok: true, value };
        }
        if (top.node.kind === 'array') top.node.items.push(value);
        else top.node.members.set((top as { key: string }).key, value);
        const close = top.node.kind === 'array' ? ']' : '}';
        if (text[i] === ',') {
          i++;
          if (top.node.kind === 'object') (top as { key: string }).key = readKey(top.node);
          break;
        }
        if (text[i] !== close) fail(`expected "," or "${close}", found ${found(text, i)}`);
        i++;
        stack.pop();
        value = top.node;
      }
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
