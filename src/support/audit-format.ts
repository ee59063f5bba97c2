// The output formats of the auditors' listings (scripts/audit, scripts/stock-at): an
// aligned table, CSV and JSON lines. Each turns rows into text one row at a time, so
// that a command can stream any number of them.

/** The columns of the stock_adjustments view, in the order they are printed. */
export const COLUMNS = ['seq', 'recorded_at', 'pet_id', 'previous_quantity', 'quantity', 'delta', 'actor', 'request_id'] as const;
type Column = (typeof COLUMNS)[number];

/** A value as read with safeIntegers(true): integers are bigints, so ids above 2^53 stay exact. */
export type Value = bigint | number | string | null;
export type AdjustmentRow = Record<Column, Value>;

export const FORMATS = ['table', 'csv', 'jsonl'] as const;
type Format = (typeof FORMATS)[number];

export function isFormat(value: unknown): value is Format {
  return typeof value === 'string' && (FORMATS as readonly string[]).includes(value);
}

/** Text for the start, for each row in order, and for the end; '' when there is none yet. */
export interface Formatter<C extends string = Column> {
  begin(): string;
  row(row: Record<C, Value>): string;
  end(): string;
}

/** A formatter for rows of these columns, in this order; numeric ones are right-aligned in a table. */
export function formatterFor<C extends string>(format: Format, columns: readonly C[], numeric: ReadonlySet<C>): Formatter<C> {
  switch (format) {
    case 'table':
      return tableFormatter(columns, numeric);
    case 'csv':
      return csvFormatter(columns);
    case 'jsonl':
      return jsonlFormatter(columns);
    default: {
      const unknown: never = format;
      throw new Error(`unknown format ${String(unknown)}`);
    }
  }
}

/** How many rows the table looks at to choose its column widths; later rows may overflow. */
const TABLE_SAMPLE = 500;

export const NUMERIC: ReadonlySet<Column> = new Set(['seq', 'pet_id', 'previous_quantity', 'quantity', 'delta']);

// A table is read by people: a newline or a tab in an actor must not break its lines.
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's whole job
const CONTROL = /[\u0000-\u001f\u007f]/g;

function tableCell(value: Value): string {
  if (value === null) return '-';
  if (typeof value === 'string') return value.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return String(value);
}

/**
 * The table holds back the first TABLE_SAMPLE rows to measure them; after that it writes
 * each row at once, with numbers right-aligned and text left-aligned.
 */
function tableFormatter<C extends string>(columns: readonly C[], numeric: ReadonlySet<C>): Formatter<C> {
  const header = columns.map((c) => c.toUpperCase());
  let held: string[][] | undefined = [];
  let widths: number[] = [];
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric.has(columns[i]!) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd() + '\n';
  const release = (): string => {
    const rows = held ?? [];
    held = undefined;
    widths = header.map((h, i) => rows.reduce((w, r) => Math.max(w, r[i]!.length), h.length));
    return line(header) + rows.map(line).join('');
  };
  return {
    begin: () => '',
    row(row) {
      const cells = columns.map((c) => tableCell(row[c]));
      if (held === undefined) return line(cells);
      held.push(cells);
      return held.length === TABLE_SAMPLE ? release() : '';
    },
    end: () => (held === undefined ? '' : release()),
  };
}

// OWASP "CSV injection": a spreadsheet runs a cell that begins with one of these as a
// formula, and an actor (cli:<any user name>) or a client's X-Request-Id such as "-2-3"
// or "=cmd|..." is chosen by someone else. A leading ' makes the cell text.
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * RFC 4180, with LF line ends: a field with a comma, quote, CR or LF is quoted. Numbers
 * (bigints from the database) are written as they are, so a delta of -3 stays a number;
 * only text is guarded against formulas.
 */
function csvField(value: Value): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvFormatter<C extends string>(columns: readonly C[]): Formatter<C> {
  return {
    begin: () => `${columns.join(',')}\n`,
    row: (row) => `${columns.map((c) => csvField(row[c])).join(',')}\n`,
    end: () => '',
  };
}

/** A JSON value written by hand for bigints, so that 9007199254740993 is not rounded. */
function jsonValue(value: Value): string {
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value);
}

function jsonlFormatter<C extends string>(columns: readonly C[]): Formatter<C> {
  const keys = columns.map((c) => JSON.stringify(c));
  return {
    begin: () => '',
    row: (row) => `{${columns.map((c, i) => `${keys[i]}:${jsonValue(row[c])}`).join(',')}}\n`,
    end: () => '',
  };
}
