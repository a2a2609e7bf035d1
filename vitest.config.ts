import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * `npm test` runs the main suites; `npm run test:fuzz` and `npm run test:chaos`
 * select their own folders through POSTROOM_SUITE (each a few minutes at most).
 */
const suite = process.env.POSTROOM_SUITE;
const include = suite === 'fuzz' ? ['test/fuzz/**/*.test.ts'] : suite === 'chaos' ? ['test/chaos/**/*.test.ts'] : ['test/**/*.test.ts'];
const exclude = suite ? ['node_modules/**'] : ['test/chaos/**', 'test/fuzz/**', 'node_modules/**'];

export default defineConfig({
  test: {
    include,
    exclude,
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: suite ? 300_000 : 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A test file's worker keeps the modules earlier files loaded, instead of loading postroom and its
    // dependencies again for every file: a third of the suites' CPU went to that. Files share no state
    // through it: each opens its own stores and servers, and the one test that mocks a module
    // (test/unit/signature-key.test.ts) loads its subject afresh with vi.resetModules().
    isolate: false,
    // The main suites: at least two files at a time, even on two cores (vitest's default there is one):
    // much of their time is spent waiting on Postgres, child processes and HTTP, and each file has its own
    // database. On the 2-core CI machine they took 291 s this way against 300-360 s one file at a time.
    // Chaos and fuzz load the machine on purpose and keep vitest's default.
    ...(suite ? {} : { maxWorkers: Math.max(2, os.availableParallelism() - 1) }),
  },
});
