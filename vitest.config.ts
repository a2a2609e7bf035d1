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
  },
});
