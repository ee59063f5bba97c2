// The service's entry point: reads the configuration, opens the database (creating or
// upgrading it; its writer thread does that), listens, and only then makes the first key
// if there is none, so that a key is never created by a start that cannot listen and
// never prints it. On SIGTERM or SIGINT it stops taking requests, lets those in flight
// finish, ends change feed streams after sending what was committed, stops the writer
// thread, closes the database and exits 0.
import { buildApp } from './app.ts';
import { failureMessage, systemWords } from './support/messages.ts';
import { makeMetrics } from './application/health/metrics.ts';
import { bootstrapMessage, createBootstrapKey, noActiveKeyWarning } from './application/access/bootstrap.ts';
import { ConfigError, readConfig, type Config } from './config.ts';
import { makeFeed } from './http/routes/feed-hub.ts';
import { createHttpServer } from './http/server/node-server.ts';
import { startIdempotencyExpiry } from './application/write/idempotency-expiry.ts';
import { logHeadWhileGrowing } from './application/read/log-head.ts';
import { forkOf, makeSignedStateWriter, recordNothingSigned, signedStatePath } from './application/signing/signed-state.ts';
import { unvouchedKeys } from './application/signing/key-standing.ts';
import { createLogger, endLog } from './support/logger.ts';
import { listenProblem } from './support/listen-problem.ts';
import { loadSigningKey, makeSigner, type SigningKeyData } from './support/signing.ts';
import type { InventoryStore } from './store/port.ts';
import { describeTarget, openStore } from './store/open.ts';
import { SigningKeyRefused } from './store/signing-keys.ts';
import { existsSync, rmSync } from 'node:fs';

const SHUTDOWN_GRACE_MS = 10_000;

let config: Config;
try {
  config = readConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`petstore-inventory: ${err.message}\n`);
  process.exit(2);
}

const logger = createLogger(config.logLevel);
let signingKey: SigningKeyData;
const signedState = signedStatePath(config.signingKeyPath);
try {
  signingKey = loadSigningKey(config.signingKeyPath, (message) => logger.warn({ file: config.signingKeyPath }, message));
  // A key made now has signed nothing; its record says so from the start, so that another
  // process starting on the same new file at the same moment finds it with its key.
  if (signingKey.made) recordNothingSigned(signedState);
  signingKey.signedState = existsSync(signedState);
} catch (err) {
  process.stderr.write(`petstore-inventory: cannot use the signing key ${config.signingKeyPath}: ${(err as Error).message}\n`);
  process.exit(1);
}
const signer = makeSigner(signingKey);
let store: InventoryStore;
try {
  // On SQLite, writes go to a worker thread: waiting for the lock or the disk never
  // stalls requests. On PostgreSQL every wait is on the server.
  store = await openStore(config.dbPath, { service: true, signingKey });
} catch (err) {
  if (err instanceof SigningKeyRefused) {
    // A key file made for this start that the log refuses is not left behind.
    if (signingKey.made) for (const file of [config.signingKeyPath, signedState]) rmSync(file, { force: true });
    process.stderr.write(`petstore-inventory: ${err.message}\n`);
  } else {
    // A system error (a server that refuses the connection, a folder that cannot be made)
    // in the words the operator commands use for it.
    const why = systemWords(err) === undefined ? (err as Error).message : failureMessage(err);
    process.stderr.write(`petstore-inventory: cannot use the database ${describeTarget(config.dbPath)}: ${why}\n`);
  }
  process.exit(1);
}
// A key never signs two checkpoints that disagree: a log that does not extend what this
// key published (a restored backup, a rewritten log) is refused before anything is signed.
// Nor does it sign as a key that scripts/keys did not enter (a SigningKeyAdded written
// with SQL). A log's first key, entered by this start, gets its record of what it signed
// at once, so that a later start finds it even if this one signs nothing.
try {
  const [{ logId }, keys] = [await store.logHead(), await store.signingKeys()];
  const unvouched = unvouchedKeys(keys, logId).find((k) => k.keyId === signer.keyId);
  const fork = unvouched
    ? `${unvouched.reason}; start with a key endorsed by scripts/keys endorse-signing`
    : await forkOf(store, signedState);
  if (fork) {
    process.stderr.write(`petstore-inventory: refusing to sign with ${config.signingKeyPath}: ${fork}\n`);
    await store.close();
    process.exit(1);
  }
  if (!signingKey.signedState) recordNothingSigned(signedState);
} catch (err) {
  process.stderr.write(`petstore-inventory: cannot read ${signedState}: ${(err as Error).message}\n`);
  await store.close();
  process.exit(1);
}
const published = makeSignedStateWriter(signedState, (err) =>
  logger.warn({ err: { message: err.message }, file: signedState }, 'cannot record the signed tree'),
);
const shownHost = ['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host;
const hostInUrl = shownHost.includes(':') ? `[${shownHost}]` : shownHost;
let accepting = true;
let stopHeadLog = () => {};
const metrics = makeMetrics({ store, processMetrics: true });
const feed = makeFeed({
  store,
  logger,
  registry: metrics.registry,
  limits: { maxStreams: config.feedMaxStreams, maxStreamsPerKey: config.feedMaxStreamsPerKey, maxLifetimeMs: config.feedStreamMaxMs },
});
const app = buildApp({
  store,
  logger,
  accepting: () => accepting,
  corsOrigins: config.corsOrigins,
  metrics,
  feed,
  idempotencyTtlMs: config.idempotencyTtlMs,
  maxRequestsPerKey: config.maxRequestsPerKey,
  signer,
  onPublished: (logId, size, root) => published.published(logId, size, root),
});
const stopExpiry = startIdempotencyExpiry(store.idempotency, Date.now, logger);
const server = createHttpServer(app, undefined, logger);

server.on('error', (err: NodeJS.ErrnoException) => {
  // One line an operator can act on, as for the other reasons a start gives up.
  process.stderr.write(`petstore-inventory: ${listenProblem(err, config.host, config.port)}\n`);
  void store.close().finally(() => process.exit(1));
});

server.listen(config.port, config.host, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const baseUrl = `http://${hostInUrl}:${port}`;
  // Created here, once the port is ours, and printed at once: a start that cannot listen
  // creates no key, and a key that exists was shown. Of several processes starting on
  // one new file, the one whose createFirst wins prints it.
  createBootstrapKey(store.keys).then(
    async (bootstrapKey) => {
      if (bootstrapKey) process.stderr.write(bootstrapMessage(bootstrapKey, baseUrl, config.dbPath));
      // A database whose keys were all revoked gets no new key, but the operator is told.
      const warning = bootstrapKey ? undefined : await noActiveKeyWarning(store.keys);
      if (warning) logger.warn(warning);
      logger.info({ url: `${baseUrl}/v1/inventory`, db: describeTarget(config.dbPath) }, 'listening');
      stopHeadLog = logHeadWhileGrowing({ store, logger, signer });
      // Lifecycle lines go out at once; request lines may wait for the block (logger.ts).
      logger.flush();
    },
    (err: Error) => {
      logger.fatal({ err: { message: err.message } }, 'cannot create the first API key');
      logger.flush();
      void store.close().finally(() => process.exit(1));
    },
  );
});

function shutdown(signal: string): void {
  if (!accepting) return;
  accepting = false;
  stopExpiry();
  stopHeadLog();
  logger.info({ signal }, 'shutting down');
  logger.flush();
  const force = setTimeout(() => {
    logger.error('requests still in flight after the grace period; exiting');
    process.exit(1);
  }, SHUTDOWN_GRACE_MS);
  force.unref();
  // close() stops accepting connections and waits for those open to end; idle
  // keep-alive connections are closed now, busy ones once their response is sent (with
  // Connection: close), so a client that keeps sending cannot hold the drain open.
  server.close(() => {
    void published
      .flush()
      .then(() => store.close())
      .then(
        () => {
          logger.info('stopped');
          return 0;
        },
        (err: Error) => {
          logger.error({ err: { message: err.message } }, 'the database did not close cleanly');
          return 1;
        },
      )
      // The last lines are written before the exit; the grace period's timer still bounds
      // a standard output that takes none.
      .then((code) => endLog(logger).then(() => process.exit(code)));
  });
  server.drain();
  // Change feed streams never end by themselves: each is sent what was committed, then
  // ended, and its connection closed with the others that went idle.
  void feed.close().then(() => server.closeIdleConnections());
}

process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
