// What scripts/verify-receipt checks of a kept Log-Receipt against a running service. A
// version 2 receipt carries its own proof: the checkpoint's signature by a pinned key,
// the event's inclusion in that checkpoint's tree, then a consistency proof from it up to
// the service's newest checkpoint. A version 1 receipt (one signature per event, before
// the tree) is checked by its signature, then by an inclusion proof of its seq and hash
// in the newest checkpoint's tree.
import type { Verifier } from '../support/checkpoint.ts';
import { originOf } from '../support/checkpoint.ts';
import { eventLeaf } from '../support/merkle.ts';
import type { LogReceipt } from '../support/log-receipt.ts';
import { keyIdOf, receiptMessage, verifySignature } from '../support/signing.ts';
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

const WHO = 'check';

type Checked = { report: string } | { problem: string };

function newestOfThisLog(newest: SignedCheckpoint | string, log: string): SignedCheckpoint | string {
  if (typeof newest === 'string') return newest;
  return newest.origin === originOf(log) ? newest : `the service signs for ${newest.origin}, not for the receipt's log ${log}`;
}

async function checkV1(get: TextGet, r: LogReceipt & { version: 1 }, pinned: readonly Verifier[]): Promise<Checked> {
  const signer = pinned.find((v) => keyIdOf(v.rawPublicKey) === r.key);
  if (!signer) return { problem: `its key ${r.key} is not among the pinned keys` };
  if (!verifySignature(signer.key, receiptMessage(r.log, r.seq, r.hash), r.sig))
    return { problem: `its signature does not verify with key ${r.key}` };
  const newest = newestOfThisLog(await newestCheckpoint(get, pinned, WHO), r.log);
  if (typeof newest === 'string') return { problem: newest };
  const wrong = inclusionProblem(r.seq, eventLeaf(r.hash), newest, await inclusionProof(get, r.seq, newest.size));
  if (wrong) return { problem: `the log no longer holds the event: ${wrong}` };
  return {
    report: `ok: version 1 receipt of seq ${r.seq}: signed by pinned key ${r.key}; the event is in the newest checkpoint (${newest.size} events)`,
  };
}

async function checkV2(get: TextGet, r: LogReceipt & { version: 2 }, pinned: readonly Verifier[]): Promise<Checked> {
  const own = openCheckpoint(r.checkpoint, pinned, WHO);
  if ('problem' in own) return { problem: `its checkpoint: ${own.problem}` };
  if (own.origin !== originOf(r.log)) return { problem: `its checkpoint is of ${own.origin}, not of the receipt's log ${r.log}` };
  const notIn = inclusionProblem(r.seq, eventLeaf(r.hash), own, r.proof);
  if (notIn) return { problem: notIn };
  const newest = newestOfThisLog(await newestCheckpoint(get, pinned, WHO), r.log);
  if (typeof newest === 'string') return { problem: newest };
  const wrong = await extensionProblem(get, own, newest);
  if (wrong) return { problem: wrong };
  return {
    report:
      `ok: version 2 receipt of seq ${r.seq}: its checkpoint (${own.size} events) is signed by a pinned key and holds the event; ` +
      `the newest checkpoint (${newest.size} events) extends it`,
  };
}

export async function verifyReceipt(get: TextGet, receipt: LogReceipt, pinned: readonly Verifier[]): Promise<ReceiptVerdict> {
  const checked = receipt.version === 1 ? await checkV1(get, receipt, pinned) : await checkV2(get, receipt, pinned);
  return 'problem' in checked ? { ok: false, reason: checked.problem } : { ok: true, report: [checked.report] };
}
