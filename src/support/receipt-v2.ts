// The Log-Receipt header of version 2, an RFC 8941 dictionary: the event (its log, seq
// and hash), the signed checkpoint of a tree that holds it (the whole note, base64) and
// its inclusion path in that tree (bottom up). One checkpoint serves a whole batch of
// writes, so a receipt carries no signature of its own. Version 1 receipts (one
// signature per event) are parsed by signing.ts; parseLogReceipt reads either.
import { parseReceipt, type Receipt } from './signing.ts';

export interface ReceiptV2 {
  log: string;
  seq: number;
  /** The event's hash, lowercase hex. */
  hash: string;
  /** The signed note, as served: its text, the empty line and its signature lines. */
  checkpoint: string;
  /** The inclusion path of leaf seq - 1 in the checkpoint's tree, bottom up. */
  proof: Buffer[];
}

export type LogReceipt = ({ version: 1 } & Receipt) | ({ version: 2 } & ReceiptV2);

const B64 = '[A-Za-z0-9+/]+={0,2}';
const V2 = new RegExp(
  `^v=2,\\s*log="([0-9a-f-]{36})",\\s*seq=(\\d{1,15}),\\s*hash="([0-9a-f]{64})",\\s*checkpoint=:(${B64}):,\\s*proof=\\(((?::${B64}:(?: :${B64}:)*)?)\\)$`,
);

/** Whether text is standard base64 with padding, as the receipt's byte sequences are. */
function canonicalBase64(text: string, bytes: Buffer): boolean {
  return bytes.toString('base64') === text;
}

/** A version 2 receipt's members, or an Error saying what is wrong with it. */
export function parseReceiptV2(header: string): ReceiptV2 | Error {
  const m = V2.exec(header.trim());
  if (!m)
    return new Error('a version 2 receipt is v=2, log="<logId>", seq=<seq>, hash="<hex>", checkpoint=:<base64>:, proof=(:<base64>: …)');
  const [, log, seq, hash, checkpointB64, proofText] = m as unknown as [string, string, string, string, string, string];
  const noteBytes = Buffer.from(checkpointB64, 'base64');
  if (!canonicalBase64(checkpointB64, noteBytes)) return new Error("the receipt's checkpoint is not standard base64");
  const proof: Buffer[] = [];
  for (const item of proofText === '' ? [] : proofText.split(' ')) {
    const b64 = item.slice(1, -1);
    const hashBytes = Buffer.from(b64, 'base64');
    if (hashBytes.length !== 32 || !canonicalBase64(b64, hashBytes))
      return new Error("each hash of the receipt's proof is 32 bytes in standard base64");
    proof.push(hashBytes);
  }
  if (Number(seq) < 1) return new Error("the receipt's seq is at least 1");
  return { log, seq: Number(seq), hash, checkpoint: noteBytes.toString('utf8'), proof };
}

/** A Log-Receipt of either version, or an Error saying what it expected. */
export function parseLogReceipt(header: string): LogReceipt | Error {
  const text = header.trim().replace(/^log-receipt:\s*/i, '');
  if (text.startsWith('v=')) {
    const v2 = parseReceiptV2(text);
    return v2 instanceof Error ? v2 : { version: 2, ...v2 };
  }
  const v1 = parseReceipt(text);
  if (v1) return { version: 1, ...v1 };
  return new Error(
    'not a Log-Receipt: version 2 starts with v=2 (then log, seq, hash, checkpoint, proof); version 1 is log="<logId>", seq=<seq>, hash="<hex>", key="<keyId>", sig=:<base64>:',
  );
}
