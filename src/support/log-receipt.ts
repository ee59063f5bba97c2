// A kept Log-Receipt of either version, as an auditor pastes it (the header's value, or
// the whole header line): version 2 (a checkpoint and an inclusion path, parsed by
// checkpoint.ts) or version 1 (one signature per event, parsed by signing.ts).
import { parseReceiptV2, type ReceiptV2 } from './checkpoint.ts';
import { parseReceipt, type Receipt } from './signing.ts';

export type LogReceipt = ({ version: 1 } & Receipt) | ({ version: 2 } & ReceiptV2);

/** A Log-Receipt of either version, or an Error saying what it expected. */
export function parseLogReceipt(header: string): LogReceipt | Error {
  const text = header.trim().replace(/^log-receipt:\s*/i, '');
  if (text.startsWith('v=')) {
    const v2 = parseReceiptV2(text);
    if (v2) return { version: 2, ...v2 };
    return new Error(
      'a version 2 receipt is v=2, log="<logId>", seq=<seq>, hash="<hex>", checkpoint=:<base64>:, proof=(:<base64>: …), each hash 32 bytes in standard base64',
    );
  }
  const v1 = parseReceipt(text);
  if (v1) return { version: 1, ...v1 };
  return new Error(
    'not a Log-Receipt: version 2 starts with v=2 (then log, seq, hash, checkpoint, proof); version 1 is log="<logId>", seq=<seq>, hash="<hex>", key="<keyId>", sig=:<base64>:',
  );
}
