// The service as npm start builds it, but opened without a signing key: the same tree
// (the same routes, stages, group commit and Merkle tree) writing no receipts and signing
// no checkpoints. The benchmark's floor for what receipts cost; never a way to run the
// service (it always signs).
//   node --import tsx scripts/bench/unsigned-service.ts   (INVENTORY_DB, PORT, HOST)
import { buildApp } from '../../src/app.ts';
import { createHttpServer } from '../../src/http/server/node-server.ts';
import { openStore } from '../../src/store/open.ts';
import { createLogger } from '../../src/support/logger.ts';

const store = await openStore(process.env.INVENTORY_DB!, { service: true });
const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
const server = createHttpServer(buildApp({ store, logger }), undefined, logger);
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => server.close(() => void store.close().then(() => process.exit(0))));
