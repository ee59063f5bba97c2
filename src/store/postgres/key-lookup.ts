// A key looked up in the database by its hash, when memory cannot answer, and the
// principal of an api_keys row only when the key log vouches for it: a row it does not
// vouch for (added or edited behind the triggers) is refused and told to the listeners
// (onDistrust), which name it in a warning.
import type pg from 'pg';
import { distrustNotices, KEY_TRUST_SQL, trustedKey, type KeyStore, type KeyTrustRow, type Principal } from '../keys.ts';

const KEY_BY_HASH = `${KEY_TRUST_SQL} WHERE k.hash = $1`;

export interface KeyLookup {
  /** The principal of an api_keys row, telling of a row the key log does not vouch for. */
  judge(row: KeyTrustRow): Principal | undefined;
  byHash(hash: string): Promise<Principal | undefined>;
  /** Looks a key refused from memory up after the answer, so that a warning names its row. */
  lookAtRefused(hash: string): void;
  onDistrust: KeyStore['onDistrust'];
}

export function makeKeyLookup(pool: pg.Pool): KeyLookup {
  const distrust = distrustNotices();
  const judge = (row: KeyTrustRow): Principal | undefined => {
    const verdict = trustedKey(row);
    if (verdict && 'distrust' in verdict) distrust.tell(row.name, verdict.distrust);
    else return verdict;
    return undefined;
  };
  const byHash = async (hash: string): Promise<Principal | undefined> => {
    const { rows } = await pool.query<KeyTrustRow>(KEY_BY_HASH, [hash]);
    return rows[0] && judge(rows[0]);
  };
  // A key refused from memory may be a row added behind the triggers, which no key change
  // announced: one look at a time, others skipped.
  let looking = false;
  const lookAtRefused = (hash: string) => {
    if (looking) return;
    looking = true;
    byHash(hash)
      .catch(() => undefined)
      .finally(() => (looking = false));
  };
  return { judge, byHash, lookAtRefused, onDistrust: (listener) => distrust.listen(listener) };
}
