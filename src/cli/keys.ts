// scripts/keys: create, list and revoke API keys; endorse, add and retire the log's
// signing keys.
import { KEY_NAME_PATTERN } from '../store/keys.ts';
import { describeTarget } from '../store/open.ts';
import { dbPathArg, openExistingStore, operatorMeta, parse, run, UsageError, type Parsed } from './common.ts';
import { signingKeyPathOf } from '../config.ts';
import { addUnendorsedSigningKey, endorseSigningKey, SigningKeyChangeRefused } from '../application/signing/signing-key-changes.ts';
import { makeSigner, readSigningKeyFile, type SigningKeyData } from '../support/signing.ts';
import { table } from './table.ts';
import { publishedSigningKeys } from '../application/read/log-keys.ts';
import { unvouchedKeys } from '../application/signing/key-standing.ts';
import { existsSync } from 'node:fs';
import { forkOf, recordNothingSigned, signedStatePath } from '../application/signing/signed-state.ts';

const USAGE = `
Usage: scripts/keys create NAME [--read-only] [--db PATH|URL]
       scripts/keys list [--db PATH|URL]
       scripts/keys revoke NAME [--db PATH|URL]
       scripts/keys endorse-signing NEW_KEY_FILE [--db PATH|URL]   (with INVENTORY_SIGNING_KEY)
       scripts/keys add-signing NEW_KEY_FILE --unendorsed [--db PATH|URL]
       scripts/keys retire-signing KEYID [--db PATH|URL]
       scripts/keys list-signing [--db PATH|URL]

Manages the API keys of the inventory service and the signing keys of its log.
  create NAME   makes a new key and prints it, alone, on standard output. It is shown
                only this once: the database keeps a hash of it. NAME (letters, digits,
                ".", "_", "-", up to 64, starting with a letter or digit) is what the
                audit log shows as the actor. With --read-only the key reads all a
                key can read (the list, an entry, the feed, the log head) and changes
                nothing (a PATCH is refused, 403): for auditors and feed consumers.
  list          names, scopes (read-write or read-only, as the key log says),
                creation and revocation times and who did them; never secrets.
  revoke NAME   the key stops working at once, in a running service too. Names of
                revoked keys stay taken.

And the log's signing keys (Ed25519, PKCS#8 PEM files: openssl genpkey -algorithm
ed25519 -out FILE). Only a log's first key is entered by the service itself:
  endorse-signing NEW_KEY_FILE
                run where the log's current key file is (INVENTORY_SIGNING_KEY, default
                data/signing-key.pem): enters the new key with its endorsement, a signed
                note by the current key that monitors check without the database.
                Then start the instance with the new key. Prints the new verifier key.
  add-signing NEW_KEY_FILE --unendorsed
                when no key of the log is left to endorse it: enters the key, saying in
                the key log that it is unendorsed; monitors do not trust it until an
                auditor pins it (verify-log --trust).
  retire-signing KEYID
                a chained SigningKeyRetired: instances signing with the key stop within
                a fraction of a second (writes answer 503) and refuse to start with it.
  list-signing  the log's signing keys: id, addition and retirement times, how each
                was entered (the log's first key, endorsed, UNENDORSED) and its verifier
                key, the line to hand to auditors out of band (verify-log --trust).

Options:
  --read-only   (create) a key that may read but not write
  --unendorsed  (add-signing) says that no key of the log vouches for the new one
  --db PATH     the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help    this text

Exit status: 0 success, 1 failure, 2 usage error.
`;

const ACTIONS = ['create', 'list', 'revoke', 'endorse-signing', 'add-signing', 'retire-signing', 'list-signing'];

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { 'read-only': { type: 'boolean' }, unendorsed: { type: 'boolean' } });
  const [action, name, ...extra] = positionals;
  const listOf = (last: string) => `${ACTIONS.slice(0, -1).join(', ')} ${last} ${ACTIONS.at(-1)}`;
  if (action === undefined) throw new UsageError(`name an action: ${listOf('or')}`);
  if (!ACTIONS.includes(action)) throw new UsageError(`unknown action ${action}: the actions are ${listOf('and')}`);
  const wantsName = !action.startsWith('list');
  if (extra.length > 0 || (wantsName ? name === undefined : name !== undefined)) {
    throw new UsageError(wantsName ? `${action} takes one ${argumentOf(action)}` : `${action} takes no arguments`);
  }
  if (values['read-only'] && action !== 'create') throw new UsageError('--read-only goes with create only');
  if (values.unendorsed && action !== 'add-signing') throw new UsageError('--unendorsed goes with add-signing only');
  if (action === 'add-signing' && !values.unendorsed) {
    throw new UsageError('add-signing enters a key no key of the log vouches for: say so with --unendorsed, or use endorse-signing');
  }
  if ((action === 'create' || action === 'revoke') && !KEY_NAME_PATTERN.test(name!)) {
    throw new UsageError(`invalid NAME "${name}": letters, digits, ".", "_", "-", up to 64, starting with a letter or digit`);
  }
  if (action === 'retire-signing' && !/^[0-9a-f]{16}$/.test(name!)) {
    throw new UsageError(`invalid KEYID "${name}": a signing key's id is 16 lowercase hex digits (GET /v1/log/signing-keys)`);
  }
  if (action === 'endorse-signing' || action === 'add-signing') return signingKeyAction(action, name!, values);
  // Listing only reads: it must work beside a writer and on a file it may not write.
  const store = await openExistingStore(values, { readonly: action.startsWith('list') });
  try {
    const keys = store.keys;
    const { actor } = operatorMeta();
    if (action === 'create') {
      const scope = values['read-only'] ? 'read-only' : 'read-write';
      process.stdout.write(`${await keys.create(name!, actor, scope)}\n`);
      // Which database: a key made in another one than the service's fails there.
      process.stderr.write(
        `created ${scope === 'read-only' ? 'read-only ' : ''}key "${name}" in ${describeTarget(dbPathArg(values))}; it is shown only this once\n`,
      );
      return 0;
    }
    if (action === 'revoke') {
      const outcome = await keys.revoke(name!, actor);
      if (outcome === 'unknown') {
        process.stderr.write(`error: no key named "${name}" in ${describeTarget(dbPathArg(values))}\n`);
        return 1;
      }
      process.stderr.write(`key "${name}" ${outcome} in ${describeTarget(dbPathArg(values))}\n`);
      return 0;
    }
    if (action === 'retire-signing') {
      const outcome = await store.retireSigningKey(name!, actor);
      if (outcome === 'unknown') {
        process.stderr.write(`error: no signing key ${name} in ${describeTarget(dbPathArg(values))}\n`);
        return 1;
      }
      process.stderr.write(`signing key ${name} ${outcome} in ${describeTarget(dbPathArg(values))}\n`);
      return 0;
    }
    if (action === 'list-signing') {
      process.stdout.write(await signingKeyTable(store));
      return 0;
    }
    const rows = (await keys.list()).map((k) => [k.name, k.scope, k.createdAt, k.createdBy, k.revokedAt ?? '-', k.revokedBy ?? '-']);
    process.stdout.write(table(['NAME', 'SCOPE', 'CREATED', 'CREATED BY', 'REVOKED', 'REVOKED BY'], rows));
    return 0;
  } finally {
    await store.close();
  }
});

/** The log's signing keys, each with how it was entered and its verifier key. */
async function signingKeyTable(store: Parameters<typeof publishedSigningKeys>[0]): Promise<string> {
  const [listed, published, { logId }] = await Promise.all([store.signingKeys(), publishedSigningKeys(store), store.logHead()]);
  const unvouched = new Set(unvouchedKeys(listed, logId).map((k) => k.keyId));
  const entered = (i: number) => {
    const key = listed[i]!;
    if (i === 0) return 'first key';
    if (unvouched.has(key.keyId)) return 'NOT BY scripts/keys';
    return key.unendorsed ? 'UNENDORSED' : 'endorsed';
  };
  const rows = published.map((k, i) => [k.keyId, k.addedAt, k.retiredAt ?? '-', entered(i), k.verifierKey]);
  return table(['KEY ID', 'ADDED', 'RETIRED', 'ENTERED', 'VERIFIER KEY'], rows);
}

function argumentOf(action: string): string {
  if (action === 'retire-signing') return 'KEYID';
  return action.endsWith('-signing') ? 'NEW_KEY_FILE' : 'NAME';
}

/** A key file's key, or an error naming the file and what it must be. */
function keyIn(path: string, what: string): SigningKeyData {
  try {
    return readSigningKeyFile(path);
  } catch (error) {
    throw new Error(`cannot use ${what} ${path}: ${(error as Error).message}`, { cause: error });
  }
}

/** Why the current key may have signed more of this log than the database holds, or
 * another tree (a restored or rewritten log), or undefined: endorsing a new key is then
 * how the log goes on, and every monitor that kept a newer checkpoint will say BROKEN,
 * which the operator is told as the key is endorsed. */
async function currentKeyAhead(store: Parameters<typeof forkOf>[0], keyFile: string): Promise<string | undefined> {
  const state = signedStatePath(keyFile);
  if (!existsSync(state)) {
    return `there is no ${state} beside the current key, so what it signed cannot be checked against this log: if it signed more of this log than this database holds, monitors that kept it will report BROKEN`;
  }
  const fork = await forkOf(store, state);
  return (
    fork &&
    `the current key ${keyFile} has signed this log further than, or differently from, this database: ${fork.split('; ')[0]}; the new key goes on from this database's log, and monitors that kept the current key's newer checkpoint will report BROKEN`
  );
}

/** endorse-signing and add-signing --unendorsed: the new key entered, its verifier key printed. */
async function signingKeyAction(action: string, file: string, values: Parsed['values']): Promise<number> {
  const added = keyIn(file, 'the new key');
  const current =
    action === 'endorse-signing' ? keyIn(signingKeyPathOf(process.env), 'the current key (INVENTORY_SIGNING_KEY)') : undefined;
  const store = await openExistingStore(values);
  try {
    const { actor } = operatorMeta();
    const where = describeTarget(dbPathArg(values));
    const fork = current && (await currentKeyAhead(store, signingKeyPathOf(process.env)));
    let result;
    try {
      result = current
        ? await endorseSigningKey(store, current, added, actor, Date.now())
        : await addUnendorsedSigningKey(store, added, actor);
    } catch (error) {
      if (!(error instanceof SigningKeyChangeRefused)) throw error;
      process.stderr.write(`error: ${error.message} in ${where}: it cannot endorse another\n`);
      return 1;
    }
    if (result.outcome === 'listed already') {
      process.stderr.write(`error: the signing key ${result.keyId} (${file}) is in the key log of ${where} already\n`);
      return 1;
    }
    // The new key starts with its own record of what it signed (nothing yet): a start
    // refuses a key of the log that has none.
    recordNothingSigned(signedStatePath(file));
    if (fork) process.stderr.write(`WARNING: ${fork}\n`);
    process.stdout.write(`${result.verifierKey}\n`);
    process.stderr.write(
      current
        ? `signing key ${result.keyId} added to ${where}, endorsed by key ${makeSigner(current).keyId}; start the instance with ${file}\n`
        : `WARNING: signing key ${result.keyId} added to ${where} UNENDORSED: no key of the log vouches for it, and monitors report it untrusted until an auditor pins its verifier key (above) with verify-log --trust, after comparing it out of band\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
