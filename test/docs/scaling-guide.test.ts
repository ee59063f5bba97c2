// The scaling guide's nginx configuration, checked by nginx itself (`nginx -t`): the block
// as written, inside the http context it belongs to, with only its certificate paths
// replaced by a self-signed certificate made here.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fencedBlocks } from '../kit/docs.ts';
import { tempDir } from '../kit/paths.ts';
import { nginx } from '../kit/nginx.ts';
import { needing, type Tool } from '../kit/tools.ts';

const openssl: Tool = {
  name: 'openssl',
  ci: true,
  missing: () => (spawnSync('openssl', ['version']).error ? 'no openssl here (apt-get install -y openssl)' : undefined),
};

needing(test, [nginx, openssl])("the scaling guide's nginx block passes nginx -t", () => {
  const blocks = fencedBlocks('docs/scaling.md', 'nginx');
  assert.is(blocks.length, 1, 'one nginx block');
  const dir = tempDir('scaling-nginx-');
  try {
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=inventory.example.com',
      ].concat(['-keyout', dir.path('key.pem'), '-out', dir.path('cert.pem')]),
      { encoding: 'utf8' },
    );
    assert.is(made.status, 0, made.stderr);
    const block = blocks[0]!
      .replace(/^(\s*ssl_certificate\s+)\S+;$/m, `$1${dir.path('cert.pem')};`)
      .replace(/^(\s*ssl_certificate_key\s+)\S+;$/m, `$1${dir.path('key.pem')};`);
    assert.is.not(block, blocks[0], 'the block names a certificate and its key, to replace');
    writeFileSync(dir.path('inventory.conf'), block);
    // The main context around it: what nginx.conf gives an http block, in the scratch folder.
    writeFileSync(
      dir.path('nginx.conf'),
      [
        `pid ${dir.path('nginx.pid')};`,
        `error_log ${dir.path('error.log')};`,
        'events {}',
        `http { access_log off; client_body_temp_path ${dir.path('body')}; include ${dir.path('inventory.conf')}; }`,
      ].join('\n'),
    );
    const checked = spawnSync('nginx', ['-t', '-p', dir.dir, '-c', dir.path('nginx.conf')], { encoding: 'utf8' });
    assert.is(checked.status, 0, checked.stderr);
    assert.match(checked.stderr, /test is successful/);
  } finally {
    dir.cleanup();
  }
});

test.run();
