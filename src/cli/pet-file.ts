// Reads the pets to track from a file: a JSON array of {petId, status?, quantity?} or a
// CSV with the header petId,status,quantity. Every bad row is reported, with its line
// or index; one bad row refuses the whole file.
import { isPetStatus, isQuantity, parsePetId, type PetStatus } from '../domain/events.ts';

export interface PetRow {
  petId: bigint;
  status: PetStatus;
  quantity: number;
}

export class BadPetFile extends Error {
  constructor(readonly problems: string[]) {
    super(`the file was refused whole, nothing was tracked:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'BadPetFile';
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

export function parsePetFile(text: string): PetRow[] {
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

function jsonRows(text: string): [string, PetRow | string][] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new BadPetFile([`not valid JSON: ${(err as Error).message}`]);
  }
  if (!Array.isArray(data)) throw new BadPetFile(['a JSON file must hold an array of pets']);
  return data.map((item, i): [string, PetRow | string] => {
    const where = `item ${i}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return [where, 'must be an object'];
    const { petId, status, quantity, ...rest } = item as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) return [where, `unknown member ${JSON.stringify(unknown[0])}: use petId, status, quantity`];
    // JSON.parse rounds numbers above 2^53: such ids must come as strings of digits.
    if (typeof petId === 'number' && !Number.isSafeInteger(petId)) {
      return [where, 'petId above 2^53 must be written as a string of digits ("9007199254740993") to stay exact'];
    }
    if (!['number', 'string'].includes(typeof petId)) return [where, 'petId is required: a number or a string of digits'];
    if (status !== undefined && typeof status !== 'string') return [where, 'status must be a string'];
    if (quantity !== undefined && typeof quantity !== 'number') return [where, 'quantity must be a number'];
    return [where, petRow(String(petId), status ?? '', quantity === undefined ? '' : String(quantity))];
  });
}
