/* global window, document, fetch, localStorage, sessionStorage, performance, setTimeout, URL, Blob */
// The auditors' page: sign in with a key kept for this tab only (sessionStorage, sent in
// Authorization, never in a URL), the log's newest checkpoint checked against the keys
// the auditor pinned and against the checkpoint kept last time (localStorage, exported
// and imported as scripts/verify-log's FILE and FILE.keys), receipts checked step by
// step, and a pet's stock history as a chart, a table and a CSV download.
import { checkReceipt, extendsCheckpoint, fromBase64, openCheckpoint, parseVerifierKey, toBase64 } from './verify.js';
import { drawInclusionPath, drawStockChart } from './draw.js';

const KEY = 'petstore-audit.key';
const PINS = 'petstore-audit.keys';
const KEPT = 'petstore-audit.checkpoint';
const PAGE = 1000;

const $ = (id) => document.getElementById(id);
const state = { verifiers: [], listed: [], newest: undefined, rows: [], pet: undefined };

function element(name, attributes = {}, ...children) {
  const e = document.createElement(name);
  for (const [key, value] of Object.entries(attributes)) e.setAttribute(key, value);
  e.append(...children);
  return e;
}

function say(id, text, kind = '') {
  const target = $(id);
  target.textContent = text;
  target.className = kind;
}

async function api(path) {
  const res = await fetch(path, { headers: { Authorization: `Bearer ${sessionStorage.getItem(KEY)}` }, cache: 'no-store' });
  if (!res.ok) {
    const error = await res.json().catch(() => ({ code: 'error', message: res.statusText }));
    throw Object.assign(new Error(`${res.status} ${error.code}: ${error.message}`), { status: res.status });
  }
  return res;
}

const readPins = () => (localStorage.getItem(PINS) ?? '').split('\n').filter((line) => line.trim() !== '');
const writePins = (pins) => localStorage.setItem(PINS, [...new Set(pins)].map((k) => `${k}\n`).join(''));
const fetchProof = async (from, to) => (await (await api(`/v1/log/proof/consistency?from=${from}&to=${to}`)).json()).hashes.map(fromBase64);

function download(text, name, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = element('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function showCheckpoint(c) {
  const rows = [
    ['log', c.origin],
    ['events', String(c.size)],
    ['root', toBase64(c.root)],
    ['signed at', c.time ?? '(no time line)'],
    ['signed by', c.signedBy ? c.signedBy.text : c.signers.map((s) => `${s.name}+${s.keyHash}`).join(', ')],
  ];
  $('checkpoint').replaceChildren(...rows.flatMap(([k, v]) => [element('dt', {}, k), element('dd', {}, v)]));
}

/** The newest checkpoint against the pinned keys, then against the kept one. */
async function loadState() {
  $('trust-listed').hidden = true;
  say('state-error', '');
  say('extends', '');
  const listed = await (await api('/v1/log/signing-keys')).json();
  state.listed = listed.map((k) => k.verifierKey);
  let pins = readPins();
  if (pins.length === 0) {
    pins = state.listed;
    writePins(pins);
    say(
      'trust',
      `Trusting on first use: no key was pinned in this browser, so the ${pins.length} key(s) the log lists now are pinned: ${pins.join(', ')}. ` +
        'Compare them with the operator out of band: a page served by the operator cannot vouch for its own keys.',
      'notice',
    );
  } else say('trust', '');
  state.verifiers = await Promise.all(pins.map(parseVerifierKey));
  const newest = await openCheckpoint(await (await api('/v1/log/checkpoint')).text(), state.verifiers);
  showCheckpoint(newest);
  if (!newest.signedBy) {
    state.newest = undefined;
    say(
      'trust',
      `NOT TRUSTED: the newest checkpoint is signed by ${newest.signers.map((s) => `${s.name}+${s.keyHash}`).join(', ')}, a key that none of your pinned keys vouched for. ` +
        'Nothing below is checked against it. Pin the new key only once the operator has confirmed it out of band.',
      'alarm',
    );
    $('trust-listed').hidden = false;
    return;
  }
  state.newest = newest;
  const kept = localStorage.getItem(KEPT);
  if (kept === null) {
    say('extends', `No checkpoint was kept in this browser yet: this one (${newest.size} events) is kept now.`, 'notice');
  } else {
    const older = await openCheckpoint(kept, state.verifiers);
    const broken = older.signedBy ? await extendsCheckpoint(older, newest, fetchProof) : 'the kept checkpoint is signed by no pinned key';
    if (broken !== undefined) {
      // The kept checkpoint stays: it is the evidence.
      say(
        'extends',
        `BROKEN: ${broken}. The checkpoint you kept (${older.size} events, ${older.time}) is kept unchanged: export it as evidence.`,
        'alarm',
      );
      return;
    }
    say('extends', `This log still extends what you saw on ${older.time} (${older.size} events, now ${newest.size}).`, 'good');
  }
  localStorage.setItem(KEPT, newest.note);
  showCommands();
}

function showCommands() {
  const origin = window.location.origin;
  const key = state.verifiers[0]?.text ?? 'VERIFIER_KEY';
  $('commands').textContent = [
    `# the newest checkpoint, and what you kept: save the exported files as checkpoint and checkpoint.keys`,
    `INVENTORY_KEY=… python3 verify_log.py --kept checkpoint --receipt receipt.txt ${origin} '${key}'`,
    `INVENTORY_KEY=… ./verify_log -kept checkpoint -receipt receipt.txt ${origin} '${key}'`,
    `INVENTORY_KEY=… scripts/verify-receipt --url ${origin} --keys checkpoint.keys receipt.txt`,
    `INVENTORY_KEY=… scripts/verify-log --url ${origin} --checkpoint checkpoint`,
  ].join('\n');
}

async function guarded(id, work) {
  try {
    await work();
  } catch (error) {
    say(id, error.message, 'error');
    if (error.status === 401) signOut();
  }
}

function signedIn(yes) {
  $('signin-form').hidden = yes;
  $('signed-in').hidden = !yes;
  for (const id of ['log-state', 'receipts', 'history']) $(id).hidden = !yes;
}

function signOut() {
  sessionStorage.removeItem(KEY);
  signedIn(false);
}

$('signin-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = $('key').value.trim();
  $('key').value = '';
  if (key === '') return say('signin-error', 'Give an API key.', 'error');
  sessionStorage.setItem(KEY, key);
  say('signin-error', '');
  signedIn(true);
  void guarded('signin-error', loadState);
});
$('signout').addEventListener('click', signOut);

$('trust-listed').addEventListener('click', () =>
  guarded('state-error', async () => {
    writePins([...readPins(), ...state.listed]);
    await loadState();
  }),
);

$('export').addEventListener('click', () => {
  const kept = localStorage.getItem(KEPT);
  if (kept === null) return say('state-error', 'No checkpoint is kept yet.', 'error');
  download(kept, 'checkpoint');
  download(
    readPins()
      .map((k) => `${k}\n`)
      .join(''),
    'checkpoint.keys',
  );
});

$('import').addEventListener('change', (event) =>
  guarded('state-error', async () => {
    const files = [...event.target.files];
    event.target.value = '';
    const keysFile = files.find((f) => f.name.endsWith('.keys'));
    const checkpointFile = files.find((f) => !f.name.endsWith('.keys'));
    const pins = keysFile ? (await keysFile.text()).split('\n').filter((l) => l.trim() !== '') : readPins();
    const verifiers = await Promise.all(pins.map(parseVerifierKey));
    if (checkpointFile) {
      const note = await checkpointFile.text();
      if (!(await openCheckpoint(note, verifiers)).signedBy) throw new Error(`${checkpointFile.name} is signed by none of the pinned keys`);
      localStorage.setItem(KEPT, note);
    }
    writePins(pins);
    await loadState();
  }),
);

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

/** Every page of the pet's adjustments, in the given format, as the list of bodies. */
async function allPages(pet, format, read) {
  const bodies = [];
  for (let after = 0; after !== null;) {
    const res = await api(`/v1/audit/stock-adjustments?pet=${pet}&after=${after}&limit=${PAGE}&format=${format}`);
    const body = await read(res);
    bodies.push(body);
    after = format === 'json' ? body.next : nextOf(res);
  }
  return bodies;
}

const nextOf = (res) => {
  const m = /[?&]after=(\d+)/.exec(res.headers.get('Link') ?? '');
  return m ? Number(m[1]) : null;
};

function showTable(rows) {
  const cell = (text, number = false) => element('td', number ? { class: 'number' } : {}, text);
  const delta = (d) => (d > 0 ? `+${d}` : String(d));
  $('changes').tBodies[0].replaceChildren(
    ...rows.map((r) =>
      element(
        'tr',
        {},
        cell(String(r.seq), true),
        cell(r.recorded_at),
        cell(String(r.previous_quantity), true),
        cell(String(r.quantity), true),
        cell(delta(r.delta), true),
        cell(r.actor),
        cell(r.request_id ?? ''),
      ),
    ),
  );
  $('changes').hidden = rows.length === 0;
}

$('pet-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void guarded('history-status', async () => {
    const started = performance.now();
    const pet = $('pet').value.trim();
    if (!/^[1-9]\d{0,18}$/.test(pet)) throw new Error('A pet id is decimal digits, from 1.');
    const pages = await allPages(pet, 'json', (res) => res.json());
    const read = performance.now();
    state.rows = pages.flatMap((p) => p.adjustments);
    state.pet = pet;
    showTable(state.rows);
    $('csv').disabled = state.rows.length === 0;
    if (state.rows.length === 0) {
      $('chart').replaceChildren();
      say('history-status', `Pet ${pet} has no stock adjustments.`);
      return;
    }
    drawStockChart($('chart'), state.rows, `Pet ${pet}: quantity over time`);
    const [readMs, drawnMs] = [Math.round(read - started), Math.round(performance.now() - read)];
    $('chart').dataset.readMs = String(readMs);
    $('chart').dataset.drawnMs = String(drawnMs);
    say('history-status', `${state.rows.length} changes of pet ${pet}: read in ${readMs} ms, drawn in ${drawnMs} ms.`);
  });
});

$('csv').addEventListener('click', () =>
  guarded('history-status', async () => {
    const pages = await allPages(state.pet, 'csv', (res) => res.text());
    // Each page starts with the header line; the file has it once.
    const text = pages.map((p, i) => (i === 0 ? p : p.slice(p.indexOf('\n') + 1))).join('');
    download(text, `stock-adjustments-${state.pet}.csv`, 'text/csv');
  }),
);

if (sessionStorage.getItem(KEY)) {
  signedIn(true);
  void guarded('signin-error', loadState);
} else signedIn(false);
showCommands();
