// A GET whose answer is read as bytes, exactly as sent (no decompression): for tiles.
import { request } from 'node:http';

export interface BytesResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: Buffer;
}

export function getBytes(port: number, path: string, headers: Record<string, string>): Promise<BytesResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const flat = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));
        resolve({ status: res.statusCode!, headers: flat, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The answer as the kit's checks read it (its body as UTF-8 text). */
export function asText(res: BytesResponse): { status: number; headers: Record<string, string | undefined>; text: string } {
  return { status: res.status, headers: res.headers, text: res.body.toString() };
}
