// scripts/keys: create, list and revoke API keys.
import { KEY_NAME_PATTERN } from '../store/keys.ts';
import { describeTarget } from '../store/open.ts';
import { dbPathArg, openExistingStore, operatorMeta, parse, run, UsageError } from './common.ts';
import { table } from './table.ts';

const USAGE = `
Usage: scripts/keys create NAME [--read-only] [--db PATH|URL]
       scripts/keys list [--db PATH|URL]
       scripts/keys revoke NAME [--db PATH|URL]

Manages the API keys of the inventory service.
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

Options:
  --read-only   (create) a key that may read but not write
  --db PATH     the database file or postgres:// URL (default: $INVENTORY_DB, else data/inventory.db)
  -h, --help    this text

Exit status: 0 success, 1 failure, 2 usage error.
`;

await run(USAGE, async (argv) => {
  const { values, positionals } = parse(argv, { 'read-only': { type: 'boolean' } });
  const [action, name, ...extra] = positionals;
  const wantsName = action === 'create' || action === 'revoke';
  if (action === undefined) throw new UsageError('name an action: create, list or revoke');
  if (!['create', 'list', 'revoke'].includes(action)) {
    throw new UsageError(`unknown action ${action}: the actions are create, list and revoke`);
  }
  if (extra.length > 0 || (wantsName ? name === undefined : name !== undefined)) {
    throw new UsageError(wantsName ? `${action} takes one NAME` : 'list takes no arguments');
  }
  if (values['read-only'] && action !== 'create') throw new UsageError('--read-only goes with create only');
  if (wantsName && !KEY_NAME_PATTERN.test(name!)) {
    throw new UsageError(`invalid NAME "${name}": letters, digits, ".", "_", "-", up to 64, starting with a letter or digit`);
  }
  // Listing only reads: it must work beside a writer and on a file it may not write.
  const store = await openExistingStore(values, { readonly: action === 'list' });
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
    const rows = (await keys.list()).map((k) => [k.name, k.scope, k.createdAt, k.createdBy, k.revokedAt ?? '-', k.revokedBy ?? '-']);
    process.stdout.write(table(['NAME', 'SCOPE', 'CREATED', 'CREATED BY', 'REVOKED', 'REVOKED BY'], rows));
    return 0;
  } finally {
    await store.close();
  }
});
