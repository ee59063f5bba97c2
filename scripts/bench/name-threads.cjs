// Preloaded (node --require) into the service that scripts/profile.ts measures: names
// each worker thread "worker-<threadId>" in /proc, so that the profile can read that
// thread's CPU time from /proc/<pid>/task/<tid>/stat. A --require preload runs in worker
// threads too (an --import one does not on Node 20). Linux only.
/* global require */
/* eslint-disable @typescript-eslint/no-require-imports -- a --require preload is CommonJS */
const { isMainThread, threadId } = require('node:worker_threads');

if (!isMainThread) require('node:fs').writeFileSync('/proc/thread-self/comm', `worker-${threadId}`);
