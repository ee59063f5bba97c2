// Times as auditors give them (scripts/audit's --since, the API's since and until), read
// into the form recorded_at writes (UTC, milliseconds), so that the two compare as text.
// A date, or a date and time (minutes, seconds and a fraction optional) with Z or an
// offset in any ISO 8601 form: +02:00, +0200 or +02.
const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2})(?::?(\d{2}))?))?$/;
const RECORDED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * An ISO 8601 time as recorded_at writes it (UTC, milliseconds), so that the two compare
 * as strings; undefined if it is not a real time. A time without a zone is refused
 * rather than guessed.
 */
export function parseInstant(text: string): string | undefined {
  const m = TIME.exec(text);
  if (!m) return undefined;
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', sign = '+', offsetHour = '0', offsetMinute = '0'] = m;
  // Date turns 2026-02-30 into 2 March and 24:00 into the next day: check the fields first.
  const date = `${year}-${month}-${day}`;
  if (new Date(`${date}T00:00:00Z`).toISOString().slice(0, 10) !== date) return undefined;
  if (+hour > 23 || +minute > 59 || +second > 59 || +offsetHour > 23 || +offsetMinute > 59) return undefined;
  // recorded_at has milliseconds: rounding a finer bound up keeps both a lower bound (at
  // or after) and an upper one (before) exact, since no row lies between the two.
  const millis = Math.ceil(Number(`0.${fraction || '0'}`) * 1000 - 1e-9);
  const offset = (sign === '-' ? -1 : 1) * (+offsetHour * 60 + +offsetMinute) * 60_000;
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const local = new Date(0);
  local.setUTCFullYear(+year!, +month! - 1, +day!);
  local.setUTCHours(+hour, +minute, +second, millis);
  const time = new Date(local.getTime() - offset);
  if (Number.isNaN(time.getTime())) return undefined;
  // An offset can push year 9999 to +010000, which no longer compares as a string.
  const iso = time.toISOString();
  return RECORDED_AT.test(iso) ? iso : undefined;
}
