// Tests that need something outside Node (a browser, Prometheus, the sqlite3 shell, …):
// registered as usual when it is here; when it is not, registered with uvu's skip, so the
// summary counts it ("Skipped: N") and the reason is printed once. Under CI (the variable
// CI set), a missing tool that CI installs (.ci/run's system_packages) is a failing test
// instead: there a skip would hide a test that should have run.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Callback } from 'uvu';
import * as assert from 'uvu/assert';

export interface Tool {
  name: string;
  /** Why it cannot be used here, or undefined when it can. */
  missing(): string | undefined;
  /** CI provides it (.ci/run installs its Debian package): missing under CI is a failure. */
  ci: boolean;
}

/** What test.skip needs besides registering: a uvu suite, or targetSuites. */
export interface Registrar<C> {
  (title: string, test: Callback<C>): void;
  skip(title?: string, test?: Callback<C>): void;
}

/** A command that answers `--version` with exit 0; `debian` names its package, for the reason. */
function command(name: string, debian: string, file = name): Tool {
  return {
    name,
    ci: true,
    missing() {
      const r = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 30_000 });
      if (r.error) return `no ${name} here (apt-get install -y ${debian})`;
      return r.status === 0 ? undefined : `${file} --version exited ${r.status}: ${r.stderr.trim()}`;
    },
  };
}

/** Where Debian's Go packages (golang-golang-x-mod-dev) are: the GOPATH to build against them. */
export const GO_PATH = '/usr/share/gocode';

export const tools = {
  chromium: command('chromium', 'chromium', '/usr/bin/chromium'),
  prometheus: command('prometheus', 'prometheus', '/usr/bin/prometheus'),
  promtool: command('promtool', 'prometheus', '/usr/bin/promtool'),
  sqlite3: command('sqlite3', 'sqlite3'),
  python3: command('python3', 'python3'),
  jq: command('jq', 'jq'),
  curl: command('curl', 'curl'),
  pgDump: command('pg_dump', 'postgresql-client'),
  pgRestore: command('pg_restore', 'postgresql-client'),
  psql: command('psql', 'postgresql-client'),
  /** Go with Debian's golang.org/x/mod (its sumdb note and tlog packages), built with GOPATH=/usr/share/gocode. */
  goSumdb: {
    name: 'go with golang.org/x/mod',
    ci: true,
    missing() {
      const r = spawnSync('go', ['version'], { encoding: 'utf8', timeout: 30_000 });
      if (r.error || r.status !== 0) return 'no go here (apt-get install -y golang-go)';
      return existsSync(`${GO_PATH}/src/golang.org/x/mod/sumdb/tlog`)
        ? undefined
        : 'no golang.org/x/mod here (apt-get install -y golang-golang-x-mod-dev)';
    },
  } satisfies Tool,
  /** Python's cryptography package (Ed25519). */
  pythonCryptography: {
    name: 'python3-cryptography',
    ci: true,
    missing() {
      const r = spawnSync('python3', ['-c', 'import cryptography'], { encoding: 'utf8', timeout: 30_000 });
      return r.status === 0 ? undefined : 'no cryptography for python3 here (apt-get install -y python3-cryptography)';
    },
  } satisfies Tool,
  /** Linux's per-process status file (peak memory): CI runs on Linux. */
  procStatus: {
    name: '/proc/<pid>/status',
    ci: true,
    missing: () => (existsSync(`/proc/${process.pid}/status`) ? undefined : 'no /proc/<pid>/status here (not Linux)'),
  } satisfies Tool,
};

/** True when the environment says this is a CI run. */
function underCi(): boolean {
  return (process.env.CI ?? '') !== '';
}

/**
 * Registers a test that needs tools: as is when all are here; else skipped (the reason
 * printed once), or, under CI with a missing tool CI installs, a test that fails saying so.
 */
export function needing<C>(test: Registrar<C>, needs: Tool[]): (title: string, body: Callback<C>) => void {
  return (title, body) => {
    const missing = needs.flatMap((tool) => {
      const why = tool.missing();
      return why === undefined ? [] : [{ tool, why }];
    });
    if (missing.length === 0) {
      test(title, body);
      return;
    }
    const reasons = missing.map((m) => m.why).join('; ');
    if (underCi() && missing.some((m) => m.tool.ci)) {
      test(title, () => assert.unreachable(`CI installs what this test needs, but: ${reasons}`));
      return;
    }
    console.log(`SKIP "${title}": ${reasons}`);
    test.skip(title, body);
  };
}
