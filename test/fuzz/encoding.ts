// Request targets as the generators write them: percent-encoding that keeps raw `%`,
// and the decoding the service applies to a path parameter.
/** Percent-encodes (UTF-8) every character outside printable ASCII; keeps `%` raw, so
 * that invalid escapes such as %zz reach the server as written. */
export function encodeTarget(text: string, keep: RegExp = /^[\x21-\x7e]$/): string {
  const bytes = (ch: string) => [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  let out = '';
  for (const ch of text) {
    if (keep.test(ch)) {
      out += ch;
      continue;
    }
    let encoded: string;
    try {
      encoded = encodeURI(ch);
    } catch {
      // encodeURI refuses lone surrogates: send the bytes of their UTF-8 replacement.
      encoded = bytes(ch);
    }
    // encodeURI leaves reserved characters (/ ? # …) alone; `keep` decides here.
    out += encoded === ch ? bytes(ch) : encoded;
  }
  return out;
}

/** For a path segment: keeps only unreserved characters and `%` raw. */
export const encodeSegment = (text: string) => encodeTarget(text, /^[A-Za-z0-9\-._~%!$&'()*+,;=:@]$/);

/** What the router makes of a path parameter (it keeps the text when it cannot decode). */
export function decodeParam(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export const utf8AsLatin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
