// nginx (Debian's nginx package, which CI installs) serving a directory as the guides say
// to serve a copy of the log: a `server` whose `root` is that directory, and nothing else.
// Its configuration, pid and logs live in a scratch folder; it runs in the foreground and
// is stopped by close().
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tempDir } from './paths.ts';
import { closedPort } from './ports.ts';
import type { StaticServer } from './static-server.ts';
import type { Tool } from './tools.ts';

export const nginx: Tool = {
  name: 'nginx',
  ci: true,
  missing: () => (spawnSync('nginx', ['-v']).error ? 'no nginx here (apt-get install -y nginx)' : undefined),
};

/** Whether the nginx started with this token answers on port (not another process that
 * took the port after it was picked). */
async function answersAsOurs(port: number, token: string): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/.ready-${token}`);
    return res.status === 200 && (await res.text()) === token;
  } catch (error) {
    // Nothing listens yet.
    if ((error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') return false;
    throw error;
  }
}

/** nginx on port, once it answers as itself; else why not (it exited, as when the port
 * was taken meanwhile, or did not answer within 10 s). */
async function started(root: string, port: number): Promise<StaticServer | string> {
  const scratch = tempDir('nginx-');
  const token = randomBytes(8).toString('hex');
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
      // The guides' server (root, nothing else), and one exact path no copy holds, which
      // tells this nginx from whatever else might answer on the port.
      `  server { listen 127.0.0.1:${port}; root ${root}; location = /.ready-${token} { return 200 ${token}; } } }`,
    ].join('\n'),
  );
  const child = spawn('nginx', ['-p', scratch.dir, '-c', scratch.path('nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  let exited = false;
  const ended = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  const until = Date.now() + 10_000;
  while (!exited && Date.now() < until && !(await answersAsOurs(port, token))) await new Promise((r) => setTimeout(r, 20));
  if (exited || Date.now() >= until) {
    child.kill('SIGKILL');
    await ended;
    scratch.cleanup();
    return `port ${port}: ${exited ? 'nginx exited' : 'no answer within 10 s'} ${stderr.trim()}`;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      // SIGQUIT: a graceful stop, which nginx finishes at once when nothing is in flight.
      if (!exited) child.kill('SIGQUIT');
      await ended;
      scratch.cleanup();
    },
  };
}

export async function serveWithNginx(root: string): Promise<StaticServer> {
  // nginx cannot take port 0 and say which port it got: a free port is picked, and
  // picked again if another process took it before nginx bound it.
  const failures: string[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    const server = await started(root, await closedPort());
    if (typeof server !== 'string') return server;
    failures.push(server);
  }
  throw new Error(`nginx did not serve the copy: ${failures.join('; ')}`);
}
