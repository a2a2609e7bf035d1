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
    // The main suites: at least two files at a time, even on two cores (vitest's default there is one):
    // much of their time is spent waiting on Postgres, child processes and HTTP, and each file has its own
    // database. On the 2-core CI machine they took 291 s this way against 300-360 s one file at a time.
    // Chaos and fuzz load the machine on purpose and keep vitest's default.
    ...(suite ? {} : { maxWorkers: Math.max(2, os.availableParallelism() - 1) }),
  },
});
