// A copy's directory: the service's paths under DIR (DIR/v1/log/...), each file written
// whole and renamed into place, so that a static server never serves half of one and a
// run that stops leaves every file either as it was or complete.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface CopyDir {
  /** The file's absolute path. */
  path(relative: string): string;
  has(relative: string): boolean;
  /** Its bytes, undefined when there is none. */
  read(relative: string): Buffer | undefined;
  write(relative: string, bytes: Buffer | string): void;
}

export function copyDir(dir: string): CopyDir {
  const path = (relative: string) => join(dir, relative);
  return {
    path,
    has: (relative) => existsSync(path(relative)),
    read(relative) {
      try {
        return readFileSync(path(relative));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw new Error(`cannot read ${path(relative)} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`, { cause: error });
      }
    },
    write(relative, bytes) {
      const file = path(relative);
      mkdirSync(dirname(file), { recursive: true });
      const temp = `${file}.${process.pid}.tmp`;
      writeFileSync(temp, bytes);
      renameSync(temp, file);
    },
  };
}
