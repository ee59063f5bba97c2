// Judges a JSON number by its literal text, not by the double JSON.parse makes of it:
// 5.0, 1e3 and 2.147483647e9 are the integers 5, 1000 and 2147483647, while
// 5.0000000000000001 and 1e-400 are fractions although JSON.parse rounds them to 5 and 0.
// Integers are exact bigints, so an id above 2^53 written as a bare number stays exact.

type NumberReading =
  | { kind: 'integer'; value: bigint }
  | { kind: 'fraction' }
  /** An integer of more than MAX_DIGITS digits: beyond every range anyone asks for. */
  | { kind: 'huge'; negative: boolean };

/** Past this many digits an integer is not built (1e999999999 would take a gigabyte). */
const MAX_DIGITS = 100;

const LITERAL = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

export function readNumberLiteral(literal: string): NumberReading {
  const m = LITERAL.exec(literal);
  if (!m) throw new Error(`not a JSON number: ${literal.slice(0, 40)}`);
  const [, sign, whole, fraction = '', exponent = '0'] = m;
  const digits = (whole! + fraction).replace(/^0+/, '');
  if (digits === '') return { kind: 'integer', value: 0n };
  // Where the decimal point falls in the significant digits once the exponent moves it.
  // The exponent may be huge ("1e99999999999999999999"): compare before building anything.
  const leadingZeros = whole!.length + fraction.length - digits.length;
  const decimalPoint = BigInt(whole!.length - leadingZeros) + BigInt(exponent);
  if (decimalPoint < BigInt(digits.length) && !/^0*$/.test(digits.slice(Math.max(0, Number(decimalPoint))))) {
    return { kind: 'fraction' };
  }
  if (decimalPoint > BigInt(MAX_DIGITS)) return { kind: 'huge', negative: sign === '-' };
  const integer =
    BigInt(digits.slice(0, Math.max(0, Number(decimalPoint))) || '0') * 10n ** BigInt(Math.max(0, Number(decimalPoint) - digits.length));
  return { kind: 'integer', value: sign === '-' ? -integer : integer };
}

/** The literal's integer if it lies in [min, max]; why not otherwise. */
export function integerInRange(
  literal: string,
  min: bigint,
  max: bigint,
): { ok: true; value: bigint } | { ok: false; why: 'fraction' | 'range' } {
  const reading = readNumberLiteral(literal);
  if (reading.kind === 'fraction') return { ok: false, why: 'fraction' };
  if (reading.kind === 'huge' || reading.value < min || reading.value > max) return { ok: false, why: 'range' };
  return { ok: true, value: reading.value };
}
