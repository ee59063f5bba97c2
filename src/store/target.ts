// What a database target (INVENTORY_DB, --db) may be, whoever reads it: a SQLite file
// path or a postgres:// URL, shown with its password masked. A value that starts with a
// scheme (a letter, then letters, digits, +, - or ., then a colon) is a URL, never a path.
import { redactUrl } from './postgres/connection.ts';

const URL_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
// RFC 3986 scheme syntax at the very start, `//` or not: postgres:/…, file:…, sqlite:….
const ANY_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

const LOOKS_LIKE =
  'a SQLite file path (data/inventory.db; ./name:with-colon.db for a name that starts like a scheme) ' +
  'or a PostgreSQL URL (postgres://USER:PASSWORD@HOST:5432/DATABASE)';

/**
 * Why a database value is refused (name: where it came from), or undefined: a URL of a
 * scheme other than postgres or postgresql, anything that starts with a scheme and is not
 * a postgres:// URL (postgres:/…, file:…), or a path with a query (SQLite URI options are
 * not read). Taken as a SQLite path, each would become a new file or folder named after
 * it, password and all, serving an empty inventory.
 */
export function foreignSchemeProblem(target: string, name: string): string | undefined {
  const scheme = ANY_SCHEME.exec(target)?.[1];
  if (scheme !== undefined) {
    if (/^postgres(ql)?$/i.test(scheme)) {
      if (URL_SCHEME.test(target)) return undefined;
      return `${name} ${maskedUrl(target)} is not a ${scheme}:// URL (its two slashes are missing): give ${LOOKS_LIKE}`;
    }
    const what = URL_SCHEME.test(target) ? `a ${scheme}:// URL` : `a ${scheme}: URL, not a file path`;
    return `${name} ${maskedUrl(target)} is ${what}: give ${LOOKS_LIKE}`;
  }
  if (target.includes('?')) {
    return `${name} ${target.slice(0, target.indexOf('?'))}?… has a query (?…), and a SQLite path takes none: give ${LOOKS_LIKE}`;
  }
  return undefined;
}

/** A value with a URL scheme, its password masked; nothing after the scheme of one that
 * does not parse or has no `//` (its user and password cannot be told from the rest),
 * since that may hold a password too. Any other value as it is. */
export function maskedUrl(target: string): string {
  const scheme = URL_SCHEME.exec(target)?.[1];
  if (scheme !== undefined) return URL.canParse(target) ? redactUrl(target) : `${scheme}://…`;
  const bare = ANY_SCHEME.exec(target)?.[1];
  return bare === undefined ? target : `${bare}:…`;
}
