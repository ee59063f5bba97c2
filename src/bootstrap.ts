// First start on a database that has never had a key: create one named "bootstrap" and
// show it once, with how to use it. A database whose keys were all revoked gets none
// (an operator may have locked it on purpose).
import type { KeyStore } from './store/keys.ts';

export function ensureBootstrapKey(keys: KeyStore, baseUrl: string, write: (text: string) => void): boolean {
  if (keys.count() > 0) return false;
  const key = keys.create('bootstrap', 'service:first-start');
  write(
    [
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
      'More keys: scripts/keys create NAME. Revoke this one: scripts/keys revoke bootstrap.',
      '',
      '',
    ].join('\n'),
  );
  return true;
}
