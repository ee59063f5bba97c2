// nginx (Debian's nginx package, which CI installs) serving a directory as the guides say
// to serve a copy of the log: a `server` whose `root` is that directory, and nothing else.
// Its configuration, pid and logs live in a scratch folder; it runs in the foreground and
// is stopped by close().
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tempDir } from './paths.ts';
import type { StaticServer } from './static-server.ts';
import type { Tool } from './tools.ts';

export const nginx: Tool = {
  name: 'nginx',
  ci: true,
  missing: () => (spawnSync('nginx', ['-v']).error ? 'no nginx here (apt-get install -y nginx)' : undefined),
};

/** A port nobody listens on now (the kernel's choice, released at once). */
function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on the port, or rejects after `ms`. */
async function listening(port: number, ms: number, exited: () => string | undefined): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const why = exited();
    if (why !== undefined) throw new Error(why);
    const open = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(true));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`nginx did not listen on ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function serveWithNginx(root: string): Promise<StaticServer> {
  const scratch = tempDir('nginx-');
  const port = await unusedPort();
  writeFileSync(
    scratch.path('nginx.conf'),
    [
      // As root, nginx's workers would otherwise run as nobody, who cannot read a test's
      // private temporary folders.
      ...(process.getuid?.() === 0 ? ['user root;'] : []),
      'daemon off;',
      'master_process off;',
      `pid ${scratch.path('nginx.pid')};`,
      `error_log ${scratch.path('error.log')};`,
      'events {}',
      `http { access_log off; client_body_temp_path ${scratch.path('body')}; proxy_temp_path ${scratch.path('proxy')};`,
      `  fastcgi_temp_path ${scratch.path('fastcgi')}; uwsgi_temp_path ${scratch.path('uwsgi')}; scgi_temp_path ${scratch.path('scgi')};`,
      `  server { listen 127.0.0.1:${port}; root ${root}; } }`,
    ].join('\n'),
  );
  const child = spawn('nginx', ['-p', scratch.dir, '-c', scratch.path('nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  let exit: string | undefined;
  const ended = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = `nginx exited (${code ?? signal}): ${stderr.trim()}`;
      resolve();
    }),
  );
  try {
    await listening(port, 10_000, () => exit);
  } catch (error) {
    child.kill('SIGKILL');
    await ended;
    scratch.cleanup();
    throw error;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      // SIGQUIT: a graceful stop, which nginx finishes at once when nothing is in flight.
      if (exit === undefined) child.kill('SIGQUIT');
      await ended;
      scratch.cleanup();
    },
  };
}
