// What a database target (INVENTORY_DB, --db) may be, whoever reads it: a SQLite file
// path or a postgres:// URL, shown with its password masked.
import { redactUrl } from './postgres/connection.ts';

const URL_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

/**
 * Why a database value with a URL scheme other than postgres or postgresql is refused
 * (name: where it came from), or undefined. Taken as a SQLite path, a mistyped URL would
 * become a new folder named after it, password and all, serving an empty inventory.
 */
export function foreignSchemeProblem(target: string, name: string): string | undefined {
  const scheme = URL_SCHEME.exec(target)?.[1];
  if (scheme === undefined || /^postgres(ql)?$/i.test(scheme)) return undefined;
  return `${name} ${maskedUrl(target)} is a ${scheme}:// URL: give a SQLite file path or a postgres:// or postgresql:// URL`;
}

/** A value with a URL scheme, its password masked; nothing after the scheme of one that
 * does not parse, since that may hold a password too. Any other value as it is. */
export function maskedUrl(target: string): string {
  const scheme = URL_SCHEME.exec(target)?.[1];
  if (scheme === undefined) return target;
  return URL.canParse(target) ? redactUrl(target) : `${scheme}://…`;
}
