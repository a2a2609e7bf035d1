import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';
import { runCli } from '../support/cli.js';
import { ROOT } from '../support/process.js';

/** Every setting the config reads, taken from the source so a new one is fuzzed too. */
const SETTINGS = [
  ...new Set(
    [
      ...fs
        .readFileSync(path.join(ROOT, 'src/config/config.ts'), 'utf8')
        .matchAll(/'((?:POSTROOM_|DATABASE_URL|PORT|HOST|LOG_LEVEL|NODE_ENV)[A-Z_]*)'/g),
    ].map((m) => m[1]!),
  ),
];

const hostile = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.constantFrom(
    '-1',
    '0',
    '1e9',
    '99999999999999999999',
    'NaN',
    'true',
    'postgres://',
    'http://',
    'ftp://x',
    '{}',
    ' ',
    '\u0000',
    '../../etc/passwd',
  ),
);

describe('bad environment values', () => {
  it('reads at least the documented settings', () => {
    expect(SETTINGS).toEqual(
      expect.arrayContaining([
        'DATABASE_URL',
        'PORT',
        'POSTROOM_WEBHOOK_SECRETS',
        'POSTROOM_SIGNED_PAYLOAD',
        'POSTROOM_ACK_TIMEOUT_MS',
        'POSTROOM_MAX_ATTEMPTS',
      ]),
    );
  });

  it('either load or fail with a ConfigError that names the setting', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SETTINGS), hostile, (name, value) => {
        try {
          loadConfig({ [name]: value });
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
          expect((err as Error).message.startsWith(`${name}: `)).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

describe('bad flags', () => {
  const invalid = fc.string({ maxLength: 30 }).map((s) => `x${s}`);
  const cases: Array<[string[], string]> = [
    [['inbox', 'list', '--status'], '--status'],
    [['inbox', 'list', '--limit'], '--limit'],
    [['inbox', 'list', '--since'], '--since'],
    [['gaps', 'list', '--status'], '--status'],
    [['gaps', 'list', '--limit'], '--limit'],
    [['serve', '--role'], '--role'],
    [['serve', '--port'], '--port'],
    [['reconcile', '--since'], '--since'],
    [['reconcile', '--concurrency'], '--concurrency'],
  ];
  for (const [args, flag] of cases) {
    it(`postroom ${args.join(' ')} <bad> names ${flag} and shows no stack trace`, async () => {
      await fc.assert(
        fc.asyncProperty(invalid, async (value) => {
          const r = await runCli([...args, value], {
            POSTROOM_DATA_DIR: '/nonexistent/postroom-fuzz',
            POSTROOM_API_BASE_URL: 'http://127.0.0.1:9',
            POSTROOM_API_KEY: 'svc_sandbox_fuzz',
          });
          expect(r.code).not.toBe(0);
          expect(r.stderr).toContain(flag);
          expect(r.stderr).not.toMatch(/\n\s+at \S+ \(/);
          expect(r.stderr).not.toContain('svc_sandbox_fuzz');
        }),
        { numRuns: 60 },
      );
    });
  }
});
