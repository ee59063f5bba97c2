// Receipts pasted, dropped or chosen as a file, each checked step by step against the
// trusted newest checkpoint, with its inclusion path drawn up the tree.
import { checkReceipt } from './verify.js';
import { drawInclusionPath } from './draw.js';
import { $, element, fetchProof, state } from './common.js';

function showReceipt(text, { results, receipt }) {
  const steps = ['format', 'signature', 'inclusion', 'consistency'];
  const list = element('ol', { class: 'steps' });
  for (const step of steps) {
    const r = results.find((x) => x.step === step);
    const item = r
      ? element('li', { class: r.ok ? 'ok' : 'failed', 'data-step': step }, `${step}: ${r.ok ? 'ok' : 'FAILED'}: ${r.detail}`)
      : element('li', { class: 'unchecked', 'data-step': step }, `${step}: not checked`);
    list.append(item);
  }
  const failed = results.find((r) => !r.ok);
  const heading = element(
    'p',
    { class: failed ? 'alarm' : 'good' },
    failed ? `Refused at the ${failed.step} step.` : `Verified: event ${receipt.seq} is in the log.`,
  );
  const block = element('div', { class: 'receipt', 'data-verdict': failed ? `failed:${failed.step}` : 'ok' }, heading, list);
  const inclusion = results.find((r) => r.step === 'inclusion');
  if (inclusion?.path) {
    const picture = element('div', { class: 'path' });
    drawInclusionPath(picture, inclusion);
    block.append(element('p', {}, 'The inclusion path, from the event up the tree:'), picture);
  }
  block.title = text.slice(0, 200);
  return block;
}

async function checkReceipts(text) {
  if (!state.newest) throw new Error('The newest checkpoint is not trusted: no receipt can be checked against it.');
  const receipts = text.split('\n').filter((l) => l.trim() !== '');
  if (receipts.length === 0) throw new Error('Paste a Log-Receipt first.');
  const blocks = [];
  for (const receipt of receipts) {
    blocks.push(showReceipt(receipt, await checkReceipt(receipt, { verifiers: state.verifiers, newest: state.newest, fetchProof })));
  }
  $('receipt-results').replaceChildren(...blocks);
}

/** Listens for receipts on the page's receipt controls. */
export function wireReceipts() {
  const receiptError = (message) => $('receipt-results').replaceChildren(element('p', { class: 'error' }, message));
  const checkingReceipts = (text) => checkReceipts(text).catch((error) => receiptError(error.message));
  $('check-receipt').addEventListener('click', () => checkingReceipts($('receipt-text').value));
  $('receipt-file').addEventListener('change', async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    $('receipt-text').value = await file.text();
    await checkingReceipts($('receipt-text').value);
  });
  $('receipt-text').addEventListener('dragover', (event) => event.preventDefault());
  $('receipt-text').addEventListener('drop', async (event) => {
    event.preventDefault();
    const file = event.dataTransfer.files[0];
    if (!file) return;
    $('receipt-text').value = await file.text();
    await checkingReceipts($('receipt-text').value);
  });
}
