// What scripts/verify-receipt checks of a kept Log-Receipt against a running service. A
// version 2 receipt carries its own proof: the checkpoint's signature by a trusted key (a
// pinned one, or one a pinned key endorsed) within that key's time in the key log, the
// event's inclusion in that checkpoint's tree, then a consistency proof from it up to the
// service's newest checkpoint (signed the same way). A version 1 receipt (one signature
// per event, before the tree) is checked by its signature, then by an inclusion proof of
// its seq and hash in the newest checkpoint's tree.
import type { Verifier } from '../../support/checkpoint.ts';
import { originOf } from '../../support/checkpoint.ts';
import { eventLeaf } from '../../support/merkle.ts';
import type { LogReceipt } from '../../support/log-receipt.ts';
import { keyIdOf, receiptMessage, verifySignature } from '../../support/signing.ts';
import { signedOutsideKeyTime, type ListedKey } from '../signing/trust.ts';
import {
  extensionProblem,
  inclusionProblem,
  inclusionProof,
  newestCheckpoint,
  openCheckpoint,
  type SignedCheckpoint,
  type TextGet,
} from './checkpoint-checks.ts';

type ReceiptVerdict = { ok: true; report: string[] } | { ok: false; reason: string };

/** The keys a receipt is checked with: those trusted, and the key log the service lists
 * (each key's time: a checkpoint its key signed outside it is BROKEN). */
export interface ReceiptKeys {
  trusted: readonly Verifier[];
  listed: readonly ListedKey[];
}

const WHO = 'check';

type Checked = { report: string } | { problem: string };

/** The service's newest checkpoint, if it is of the receipt's log and signed in its key's time. */
async function newestOfThisLog(get: TextGet, log: string, { trusted, listed }: ReceiptKeys): Promise<SignedCheckpoint | string> {
  const newest = await newestCheckpoint(get, trusted, WHO);
  if (typeof newest === 'string') return newest;
  if (newest.origin !== originOf(log)) return `the service signs for ${newest.origin}, not for the receipt's log ${log}`;
  const outside = signedOutsideKeyTime(newest, trusted, listed);
  return outside ? `the newest checkpoint: ${outside}` : newest;
}

async function checkV1(get: TextGet, r: LogReceipt & { version: 1 }, keys: ReceiptKeys): Promise<Checked> {
  const signer = keys.trusted.find((v) => keyIdOf(v.rawPublicKey) === r.key);
  if (!signer) return { problem: `its key ${r.key} is not among the trusted keys` };
  if (!verifySignature(signer.key, receiptMessage(r.log, r.seq, r.hash), r.sig))
    return { problem: `its signature does not verify with key ${r.key}` };
  const newest = await newestOfThisLog(get, r.log, keys);
  if (typeof newest === 'string') return { problem: newest };
  const wrong = inclusionProblem(r.seq, eventLeaf(r.hash), newest, await inclusionProof(get, r.seq, newest.size));
  if (wrong) return { problem: `the log no longer holds the event: ${wrong}` };
  return {
    report: `ok: version 1 receipt of seq ${r.seq}: signed by trusted key ${r.key}; the event is in the newest checkpoint (${newest.size} events)`,
  };
}

async function checkV2(get: TextGet, r: LogReceipt & { version: 2 }, keys: ReceiptKeys): Promise<Checked> {
  const own = openCheckpoint(r.checkpoint, keys.trusted, WHO);
  if ('problem' in own) return { problem: `its checkpoint: ${own.problem}` };
  if (own.origin !== originOf(r.log)) return { problem: `its checkpoint is of ${own.origin}, not of the receipt's log ${r.log}` };
  const outside = signedOutsideKeyTime(own, keys.trusted, keys.listed);
  if (outside) return { problem: `its checkpoint: ${outside}` };
  const notIn = inclusionProblem(r.seq, eventLeaf(r.hash), own, r.proof);
  if (notIn) return { problem: notIn };
  const newest = await newestOfThisLog(get, r.log, keys);
  if (typeof newest === 'string') return { problem: newest };
  const wrong = await extensionProblem(get, own, newest);
  if (wrong) return { problem: wrong };
  return {
    report:
      `ok: version 2 receipt of seq ${r.seq}: its checkpoint (${own.size} events) is signed by a trusted key and holds the event; ` +
      `the newest checkpoint (${newest.size} events) extends it`,
  };
}

export async function verifyReceipt(get: TextGet, receipt: LogReceipt, keys: ReceiptKeys): Promise<ReceiptVerdict> {
  const checked = receipt.version === 1 ? await checkV1(get, receipt, keys) : await checkV2(get, receipt, keys);
  return 'problem' in checked ? { ok: false, reason: checked.problem } : { ok: true, report: [checked.report] };
}
