/* global sessionStorage, localStorage */
// The auditors' page: sign in with a key kept for this tab only (sessionStorage, sent in
// Authorization, never in a URL), the log's newest checkpoint checked against the keys
// the auditor pinned and against the checkpoint kept last time (localStorage, exported
// and imported as scripts/verify-log's FILE and FILE.keys), receipts checked step by
// step, and a pet's stock history as a chart, a table and a CSV download.
import { openCheckpoint, parseVerifierKey } from './verify.js';
import { $, KEPT, KEY, download, guarded, readPins, say, signedIn, signOut, state, writePins } from './common.js';
import { loadState, showCommands } from './log-state.js';
import { wireReceipts } from './receipts-view.js';
import { wireHistory } from './history.js';

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

wireReceipts();
wireHistory();

if (sessionStorage.getItem(KEY)) {
  signedIn(true);
  void guarded('signin-error', loadState);
} else signedIn(false);
showCommands();
