import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';

describe('loadConfig', () => {
  it('has working defaults with an empty environment', () => {
    const c = loadConfig({}, '/srv/app');
    expect(c.ingress).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      maxBodyBytes: 1024 * 1024,
      toleranceSeconds: 300,
      signedPayload: 'body',
      ackTimeoutMs: 5000,
      secrets: [],
    });
    expect(c.database).toMatchObject({ url: undefined, dataDir: '/srv/app/.postroom' });
    expect(c.worker.maxAttempts).toBe(10);
    expect(c.reconcileCron).toBe('*/5 * * * *');
    expect(c.production).toBe(false);
  });

  it('splits the secret list and trims entries', () => {
    expect(loadConfig({ POSTROOM_WEBHOOK_SECRETS: ' whsec_a , whsec_b,, ' }).ingress.secrets).toEqual(['whsec_a', 'whsec_b']);
  });

  const bad: Array<[Record<string, string>, string, RegExp]> = [
    [{ PORT: 'eighty' }, 'PORT', /whole number from 0 to 65535/],
    [{ PORT: '70000' }, 'PORT', /whole number from 0 to 65535/],
    [{ POSTROOM_SIGNED_PAYLOAD: 'header' }, 'POSTROOM_SIGNED_PAYLOAD', /body \| timestamp\.body/],
    [{ POSTROOM_MAX_BODY_BYTES: '-1' }, 'POSTROOM_MAX_BODY_BYTES', /whole number/],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL', /postgres:/],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL', /absolute URL/],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /fatal \| error/],
    [{ POSTROOM_ENCRYPTION_KEY: 'short' }, 'POSTROOM_ENCRYPTION_KEY', /32 random bytes/],
  ];
  for (const [env, setting, accepted] of bad) {
    it(`names ${setting} and what it accepts when it is ${JSON.stringify(Object.values(env)[0])}`, () => {
      let err: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).code).toBe('config_invalid');
      expect((err as ConfigError).message).toMatch(new RegExp(`^${setting}: `));
      expect((err as ConfigError).message).toMatch(accepted);
    });
  }

  it('never echoes a rejected encryption key', () => {
    const key = 'super-secret-value-that-is-wrong';
    expect(() => loadConfig({ POSTROOM_ENCRYPTION_KEY: key })).toThrow(ConfigError);
    try {
      loadConfig({ POSTROOM_ENCRYPTION_KEY: key });
    } catch (e) {
      expect((e as Error).message).not.toContain(key);
    }
  });
});
