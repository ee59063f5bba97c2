/* global window, localStorage */
// The log's state: the newest checkpoint checked against the pinned keys, then against the
// checkpoint kept last time, and the commands that check the same from a shell.
import { extendsCheckpoint, openCheckpoint, parseVerifierKey, toBase64, trustChain } from './verify.js';
import { $, KEPT, api, element, fetchProof, readPins, say, state, writePins } from './common.js';

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
export async function loadState() {
  $('trust-listed').hidden = true;
  say('state-error', '');
  say('extends', '');
  const listed = await (await api('/v1/log/signing-keys')).json();
  state.listed = listed.map((k) => k.verifierKey);
  let pins = readPins();
  const firstUse = pins.length === 0;
  // On first use only the log's first key is pinned; the keys endorsed from it are
  // trusted through their endorsements, each checked, and every other key stays untrusted.
  if (firstUse) pins = state.listed.slice(0, 1);
  const pinned = await Promise.all(pins.map(parseVerifierKey));
  const logId = pinned[0]?.name.slice('petstore-inventory/'.length) ?? '';
  const chain = await trustChain(pinned, listed, logId);
  writePins([...pins, ...chain.endorsed.map(({ key }) => key.verifierKey)]);
  const trusted = [...pins, ...chain.endorsed.map(({ key }) => key.verifierKey)];
  say(
    'trust',
    firstUse
      ? `Trusting on first use: no key was pinned in this browser, so the log's first key and the ${chain.endorsed.length} key(s) endorsed from it are pinned: ${trusted.join(', ')}. ` +
          'Compare them with the operator out of band: a page served by the operator cannot vouch for its own keys.'
      : '',
    firstUse ? 'notice' : '',
  );
  say(
    'untrusted',
    chain.untrusted.length === 0
      ? ''
      : `UNTRUSTED: ${chain.untrusted.map((k) => `key ${k.keyId} (${k.endorsedBy === null ? 'no endorsement: added --unendorsed, or not by the operator’s tools' : 'its endorsement does not verify against a trusted key'})`).join('; ')} ` +
          'is listed by the log but not trusted: nothing it signs is Verified here until you pin it, once its owner confirmed it out of band.',
    'alarm',
  );
  state.verifiers = chain.trusted;
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

export function showCommands() {
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
