// Operators read what Node.js, parseArgs, SQLite and PostgreSQL's driver say only through this module: each
// failure becomes one line in the operator's words ("cannot read pets.json: no such
// file"), never a raw "ENOENT: no such file or directory, open 'pets.json'".

const SYSTEM_WORDS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  EEXIST: 'a file is in the way',
  ENOTDIR: 'a part of the path is not a directory',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EMFILE: 'too many open files',
  ENAMETOOLONG: 'the name is too long',
  ELOOP: 'too many symbolic links',
  EIO: 'an input/output error of the device',
  // Reaching a PostgreSQL server.
  ECONNREFUSED: 'the database server refused the connection (is it running on that host and port?)',
  ECONNRESET: 'the database server closed the connection',
  ETIMEDOUT: 'the database server did not answer in time',
  ENOTFOUND: 'the database host name is not known',
  EHOSTUNREACH: 'the database host cannot be reached',
};

const SYSCALL_VERBS: Record<string, string> = {
  open: 'open',
  read: 'read',
  write: 'write',
  mkdir: 'create the directory',
  stat: 'look at',
  lstat: 'look at',
  scandir: 'list',
};

const SQLITE_WORDS: Record<string, string> = {
  SQLITE_BUSY: 'the database is busy: another process holds its lock; try again',
  SQLITE_LOCKED: 'the database is busy: another process holds its lock; try again',
  SQLITE_NOTADB: 'the file is not an SQLite database',
  SQLITE_CORRUPT: 'the database file is damaged',
  SQLITE_CANTOPEN: 'the database file cannot be opened (check the path and its permissions)',
  SQLITE_READONLY: 'the database cannot be written by this user',
  SQLITE_FULL: 'no space left on the device',
  SQLITE_IOERR: 'an input/output error while reading or writing the database',
  SQLITE_PERM: 'permission denied on the database',
};

type SystemError = Error & { code?: unknown; syscall?: unknown; path?: unknown };

/** The words for a Node.js system error code, or undefined when err is not one. */
export function systemWords(err: unknown): string | undefined {
  const code = (err as SystemError | null)?.code;
  if (typeof code !== 'string' || !/^E[A-Z]+$/.test(code)) return undefined;
  return SYSTEM_WORDS[code] ?? `system error ${code}`;
}

/** One line for any failure: ours as written, Node's and SQLite's translated. */
export function failureMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const { code, syscall, path } = err as SystemError;
  const words = systemWords(err);
  if (words !== undefined) {
    const verb = (typeof syscall === 'string' && SYSCALL_VERBS[syscall]) || 'use';
    return typeof path === 'string' ? `cannot ${verb} ${path}: ${words}` : words;
  }
  if (typeof code === 'string' && code.startsWith('SQLITE_')) {
    const base = code.replace(/^(SQLITE_[A-Z]+)_.*$/, '$1');
    return SQLITE_WORDS[code] ?? SQLITE_WORDS[base] ?? `the database refused the operation (${code})`;
  }
  return err.message;
}

/**
 * parseArgs' own words ("Option '--quantity' argument is ambiguous. Did you forget…")
 * as one line an operator can act on. argv finds the value that was refused.
 */
export function argumentProblem(err: unknown, argv: string[]): string {
  const e = err as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' ? e.message : '';
  const option = /'(?:-\w, )?(--?[\w-]+)/.exec(message)?.[1] ?? 'an option';
  switch (e?.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return 'unexpected argument';
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      if (/does not take an argument/.test(message)) return `${option} takes no value`;
      const next = argv[argv.indexOf(option) + 1];
      if (/ambiguous/.test(message) && next !== undefined && !/^--?[A-Za-z]/.test(next)) {
        return `${option} ${next}: a value that starts with "-" must be written ${option}=${next}`;
      }
      return `${option} needs a value`;
    }
    default:
      return message.split('\n')[0] || 'the arguments cannot be read';
  }
}
