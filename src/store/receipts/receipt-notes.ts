// The signed checkpoint a batch's receipts carry: its text (the batch's tree as of now),
// and, once signed, the note and each receipt put in place (on the answer and on the
// stored 200's record). Signing here, on the calling thread, is the fallback of the
// signing thread and the whole of the in-place mode.
import type { BatchToSign, Ticket } from './receipt-types.ts';
import { makeSigner, type SigningKeyData } from '../../support/signing.ts';
import { checkpointText, originOf, receiptHeaderOfNote, signedNote } from '../../support/checkpoint.ts';

export interface ReceiptNotes {
  /** The checkpoint's text: the batch's tree as of now; undefined when nothing is signed. */
  textOf: (batch: BatchToSign) => string | undefined;
  /** Puts the note signed with signatures, and each receipt, in place. */
  put: (batch: BatchToSign, text: string | undefined, signatures: readonly string[]) => void;
  /** Signs on the calling thread and puts the receipts in place. */
  signHere: (batch: BatchToSign, text?: string) => void;
  /** A ticket that signs on the calling thread when its receipts are first asked for. */
  signedWhenTaken: (batch: BatchToSign, text?: string) => Ticket;
}

export function makeReceiptNotes(key: SigningKeyData, logId: string): ReceiptNotes {
  const signer = makeSigner(key);
  const origin = originOf(logId);
  const rawPublicKey = Buffer.from(signer.publicKey, 'base64url');
  const textOf = ({ receipts, tree, keys }: BatchToSign) =>
    receipts.length === 0 || !tree.root
      ? undefined
      : checkpointText({ origin, size: tree.size, root: tree.root, keys, time: new Date().toISOString() });
  const put = (batch: BatchToSign, text: string | undefined, signatures: readonly string[]) => {
    if (text === undefined) return;
    const note = signedNote(text, origin, rawPublicKey, Buffer.from(signatures[0]!, 'base64'));
    const noteBase64 = Buffer.from(note, 'utf8').toString('base64');
    for (const p of batch.receipts) {
      const receipt = receiptHeaderOfNote(logId, p.seq, p.hash, noteBase64, p.proof ?? []);
      p.appended.receipt = receipt;
      p.appended.checkpoint = note;
      if (p.record) p.record.receipt = receipt;
    }
  };
  const signHere = (batch: BatchToSign, text = textOf(batch)) =>
    put(batch, text, text === undefined ? [] : [signer.sign(text).toString('base64')]);
  const signedWhenTaken = (batch: BatchToSign, text = textOf(batch)): Ticket => {
    let signed = false;
    const once = () => {
      if (!signed) signHere(batch, text);
      signed = true;
    };
    return { placeReceiptsSync: once, placeReceipts: () => Promise.resolve(once()) };
  };
  return { textOf, put, signHere, signedWhenTaken };
}
