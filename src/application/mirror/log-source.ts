// The log's files as a service or a copy of it serves them: GET with the key (a static
// server ignores it), bodies as bytes (a bundle sent gzip-compressed arrives inflated),
// anything but 200 an error that names the status, and a count of the bytes downloaded.
export class AnsweredStatus extends Error {
  override name = 'AnsweredStatus';
  constructor(
    readonly path: string,
    readonly status: number,
    text: string,
  ) {
    super(`GET ${path} answered ${status}: ${text.slice(0, 200)}`);
  }
}

export interface LogSource {
  bytes(path: string): Promise<Buffer>;
  text(path: string): Promise<string>;
  /** The bytes of every body received so far, as sent (compressed where it was). */
  downloaded(): number;
}

export function logSource(baseUrl: string, key: string, timeoutMs = 30_000): LogSource {
  const base = baseUrl.replace(/\/+$/, '');
  let downloaded = 0;
  const bytes = async (path: string) => {
    const res = await fetch(`${base}${path}`, {
      headers: key === '' ? {} : { Authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = Buffer.from(await res.arrayBuffer());
    const sent = Number(res.headers.get('content-length') ?? NaN);
    downloaded += Number.isSafeInteger(sent) ? sent : body.length;
    if (res.status !== 200) throw new AnsweredStatus(path, res.status, body.toString('utf8'));
    return body;
  };
  return { bytes, text: async (path) => (await bytes(path)).toString('utf8'), downloaded: () => downloaded };
}
