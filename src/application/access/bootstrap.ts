// First start on a database that has never had a key: create one named "bootstrap" and
// show it once, with how to use it. A database whose keys were all revoked gets none
// (an operator may have locked it on purpose). Two processes starting together on a new
// file make one key between them (createFirst is atomic). The service calls this only
// once it listens, and prints the key at once: a start that fails to listen (the port is
// taken) must not leave behind a key that nobody was shown.
import { DEFAULT_DB_PATH } from '../../config.ts';
import type { KeyStore } from '../../store/keys.ts';
import { dbArgument } from '../../store/open.ts';

/** The new key, or undefined when the database has (or had) keys. */
export function createBootstrapKey(keys: KeyStore): Promise<string | undefined> {
  return keys.createFirst('bootstrap', 'service:first-start');
}

/** A warning for the start of a service whose keys were all revoked, else undefined. */
export async function noActiveKeyWarning(keys: KeyStore): Promise<string | undefined> {
  const all = await keys.list();
  if (all.length === 0 || all.some((key) => key.revokedAt === null)) return undefined;
  return 'no active API key exists (all were revoked): every request under /v1 is refused until one is created with scripts/keys create NAME';
}

/**
 * The key, how to try it, and how to make more: on any database but the default, the
 * commands name it with --db, since without it they would use data/inventory.db.
 */
export function bootstrapMessage(key: string, baseUrl: string, db: string = DEFAULT_DB_PATH): string {
  const { arg, note } = dbArgument(db);
  const on = db === DEFAULT_DB_PATH ? '' : ` --db ${arg}`;
  return [
    '',
    'This database had no API key, so one was created, named "bootstrap".',
    'It is shown only this once; keep it somewhere safe:',
    '',
    `    ${key}`,
    '',
    'Try it:',
    '',
    `    curl -H "Authorization: Bearer ${key}" ${baseUrl}/v1/inventory`,
    '',
    `More keys: scripts/keys create NAME${on}. Revoke this one: scripts/keys revoke bootstrap${on}.${on ? note : ''}`,
    '',
    '',
  ].join('\n');
}
