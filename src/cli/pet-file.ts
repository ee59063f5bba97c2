// Reads the pets to track from a file: a JSON array of {petId, status?, quantity?} or a
// CSV with the header petId,status,quantity. Every bad row is reported, with its line
// or index; one bad row refuses the whole file. JSON is judged exactly as a PATCH body
// is (the shared strict reader): a repeated member is refused, and numbers count as
// written, so 2147483647.0000001 is a fraction and 9007199254740993 stays exact.
import { isPetStatus, isQuantity, parsePetId, type PetStatus } from '../domain/events.ts';
import { integerInRange } from '../json/json-number.ts';
import { readStrictJson, type JsonNode } from '../json/strict-json.ts';
import { systemWords } from '../support/messages.ts';

export interface PetRow {
  petId: bigint;
  status: PetStatus;
  quantity: number;
}

class BadPetFile extends Error {
  constructor(
    readonly problems: string[],
    source = 'the file',
  ) {
    super(`${source} was refused whole, nothing was tracked:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'BadPetFile';
  }
}

/**
 * Reads and judges a pet file. Its bytes must be UTF-8, as a PATCH body's must: a
 * replacement character silently put in place of a bad byte would be tracked as data.
 */
export function readPetFile(path: string, read: (path: string) => Uint8Array): PetRow[] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(read(path));
  } catch (err) {
    if (err instanceof TypeError) throw new BadPetFile(['the file is not valid UTF-8 text'], path);
    const words = systemWords(err);
    if (words === undefined) throw err;
    throw new Error(`cannot read ${path}: ${words}`, { cause: err });
  }
  try {
    return parsePetFile(text);
  } catch (err) {
    if (err instanceof BadPetFile) throw new BadPetFile(err.problems, path);
    throw err;
  }
}

/** Checks one row's raw values; returns the row or a problem. */
export function petRow(petId: string, status: string, quantity: string): PetRow | string {
  const id = parsePetId(petId);
  if (id === undefined) return `petId must be decimal digits from 1 to 9223372036854775807, not ${JSON.stringify(petId)}`;
  const s = status === '' ? 'available' : status;
  if (!isPetStatus(s)) return `status must be available, pending or sold, not ${JSON.stringify(status)}`;
  const q = quantity === '' ? 0 : Number(quantity);
  if (!/^\s*\d*\s*$/.test(quantity) || !isQuantity(q)) {
    return `quantity must be an integer from 0 to 2147483647, not ${JSON.stringify(quantity)}`;
  }
  return { petId: id, status: s, quantity: q };
}

function parsePetFile(text: string): PetRow[] {
  const body = text.replace(/^\uFEFF/, '');
  const entries = body.trimStart().startsWith('[') ? jsonRows(body) : csvRows(body);
  const problems: string[] = [];
  const rows: PetRow[] = [];
  const seen = new Map<bigint, string>();
  for (const [where, row] of entries) {
    if (typeof row === 'string') {
      problems.push(`${where}: ${row}`);
    } else if (seen.has(row.petId)) {
      problems.push(`${where}: pet ${row.petId} appears again (first at ${seen.get(row.petId)})`);
    } else {
      seen.set(row.petId, where);
      rows.push(row);
    }
  }
  if (problems.length > 0) throw new BadPetFile(problems);
  if (rows.length === 0) throw new BadPetFile(['the file holds no pets']);
  return rows;
}

function csvRows(text: string): [string, PetRow | string][] {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((h) => unquote(h.trim()));
  if (header.join(',') !== 'petId,status,quantity') {
    throw new BadPetFile([`line 1: the CSV header must be petId,status,quantity, not ${JSON.stringify(lines[0] ?? '')}`]);
  }
  const rows: [string, PetRow | string][] = [];
  lines.slice(1).forEach((line, i) => {
    if (line.trim() === '') return;
    const cells = line.split(',').map((c) => unquote(c.trim()));
    const where = `line ${i + 2}`;
    if (cells.length !== 3) rows.push([where, `expected 3 fields (petId,status,quantity), found ${cells.length}`]);
    else rows.push([where, petRow(cells[0]!, cells[1]!, cells[2]!)]);
  });
  return rows;
}

function unquote(cell: string): string {
  return cell.length >= 2 && cell.startsWith('"') && cell.endsWith('"') ? cell.slice(1, -1) : cell;
}

const INT64_MAX = 9223372036854775807n;
const QUANTITY_MAX = 2147483647n;

function jsonRows(text: string): [string, PetRow | string][] {
  const read = readStrictJson(text);
  if (!read.ok && read.problem === 'duplicate') {
    throw new BadPetFile([`${read.at}: member ${JSON.stringify(read.member)} appears more than once in one object; write it once`]);
  }
  if (!read.ok) throw new BadPetFile([`not valid JSON: ${read.reason}`]);
  if (read.value.kind !== 'array') throw new BadPetFile(['a JSON file must hold an array of pets']);
  return read.value.items.map((item, i): [string, PetRow | string] => [`item ${i}`, jsonRow(item)]);
}

function jsonRow(item: JsonNode): PetRow | string {
  if (item.kind !== 'object') return 'must be an object';
  const { members } = item;
  const unknown = [...members.keys()].find((name) => !['petId', 'status', 'quantity'].includes(name));
  if (unknown !== undefined) return `unknown member ${JSON.stringify(unknown)}: use petId, status, quantity`;
  const petId = members.get('petId');
  const status = members.get('status');
  const quantity = members.get('quantity');
  let id: string;
  if (petId?.kind === 'string') id = petId.value;
  else if (petId?.kind === 'number') {
    const judged = integerInRange(petId.literal, 1n, INT64_MAX);
    if (!judged.ok) return `petId must be an integer from 1 to 9223372036854775807, not ${petId.literal}`;
    id = String(judged.value);
  } else return 'petId is required: a number or a string of digits';
  if (status !== undefined && status.kind !== 'string') return 'status must be a string';
  let q = '';
  if (quantity !== undefined) {
    if (quantity.kind !== 'number') return 'quantity must be a number';
    const judged = integerInRange(quantity.literal, 0n, QUANTITY_MAX);
    if (!judged.ok) return `quantity must be an integer from 0 to 2147483647, not ${quantity.literal}`;
    q = String(judged.value);
  }
  return petRow(id, status?.value ?? '', q);
}
