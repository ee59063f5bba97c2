// The arguments of the developers' scripts (bench, soak, profiles, pictures): --help
// (or -h) prints the script's own header comment, which says what it does and how to
// call it, and exits 0; an unknown option, a missing value or a stray argument prints
// one error line and "see --help" and exits 2, instead of Node's stack.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The leading `//` comment of a file, without the slashes. */
export function headerOf(file: string): string {
  const lines: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('//')) break;
    lines.push(line.replace(/^\/\/ ?/, ''));
  }
  return `${lines.join('\n').trim()}\n`;
}

/**
 * parseArgs for the script at url (its import.meta.url), strict, with --help. At most
 * maxPositionals positional arguments (0 unless given).
 */
export function scriptArgs<O extends Options>(
  url: string,
  options: O,
  maxPositionals = 0,
): { values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true }>>['values']; positionals: string[] } {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(headerOf(fileURLToPath(url)));
    process.exit(0);
  }
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    if (parsed.positionals.length > maxPositionals)
      throw new Error(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`);
    return parsed;
  } catch (err) {
    // parseArgs' messages end with advice for programs ("To specify a positional…"): keep the first sentence.
    const message = (err as Error).message.split('. ')[0]!.replace(/\.$/, '');
    process.stderr.write(`error: ${message}\nsee --help\n`);
    process.exit(2);
  }
}
