import type * as nodeCrypto from 'node:crypto';
import { KeyObject } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';

// Records what key each HMAC is made with. node:crypto is Node's, not ours: wrapping it
// changes nothing the code under test computes.
const keys = vi.hoisted(() => [] as unknown[]);
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof nodeCrypto>();
  return {
    ...crypto,
    createHmac: (algorithm: string, key: Parameters<typeof crypto.createHmac>[1]) => {
      keys.push(key);
      return crypto.createHmac(algorithm, key);
    },
  };
});

// Test files share a worker's modules (vitest.config.ts): load the signature module again, now under the mock.
// Afterwards, let it go again, so that no later file gets the copy bound to the mock.
vi.resetModules();
const { sign, verifySignature } = await import('../../src/signature/index.js');
afterAll(() => vi.resetModules());

/**
 * On Node 24, createHmac given the key as bytes checks whether they are a KeyObject or a
 * CryptoKey the slow way: about 16 µs a call against 3.4 µs for a KeyObject, which would make a
 * delivery's verification cost more than everything else ingress does for it. So every secret
 * becomes a KeyObject once, and every HMAC after uses it.
 * That a cached key leaves every digest as it was, signature-vectors.test.ts shows: it runs
 * the shared vectors through the same cache.
 */
describe('the HMAC key', () => {
  it('is a KeyObject made once per secret, never the secret as bytes or text', () => {
    keys.length = 0;
    const body = Buffer.from('{"event_id":"evt_1"}');
    const header = sign({ secret: 'whsec_one', body, timestamp: 1_700_000_000 });
    for (let i = 0; i < 3; i++) {
      const r = verifySignature({ header, body, secrets: ['whsec_two', 'whsec_one'], now: 1_700_000_000, toleranceSeconds: 300 });
      expect(r).toMatchObject({ ok: true, secretIndex: 1 });
    }
    expect(keys).toHaveLength(7);
    for (const k of keys) expect(k).toBeInstanceOf(KeyObject);
    // The same object for the same secret: made once, not per request.
    expect(new Set(keys).size).toBe(2);
  });

  it('keeps a bounded set of keys: past it, an old secret is made again and still verifies', () => {
    const body = Buffer.from('{"n":1}');
    const secrets = Array.from({ length: 1200 }, (_, i) => `whsec_${i}`);
    const headers = secrets.map((secret) => sign({ secret, body, timestamp: 1_700_000_000 }));
    const check = (i: number): void => {
      const r = verifySignature({ header: headers[i], body, secrets: [secrets[i]!], now: 1_700_000_000, toleranceSeconds: 300 });
      expect(r.ok).toBe(true);
    };
    keys.length = 0;
    secrets.forEach((_, i) => check(i));
    expect(new Set(keys).size).toBe(1200);
    // The latest secrets are still held: their keys come back as they were.
    for (let i = 1100; i < 1200; i++) check(i);
    expect(new Set(keys).size).toBe(1200);
    // The first has been let go: made again, and right.
    check(0);
    expect(new Set(keys).size).toBe(1201);
  });

  it('keys a secret by its exact text: secrets that differ only in normalisation stay apart', () => {
    const body = Buffer.from('{}');
    const composed = 'whsec_\u00e9';
    const decomposed = 'whsec_e\u0301';
    const header = sign({ secret: composed, body, timestamp: 1_700_000_000 });
    const ok = (secret: string) => verifySignature({ header, body, secrets: [secret], now: 1_700_000_000, toleranceSeconds: 300 }).ok;
    expect(ok(composed)).toBe(true);
    expect(ok(decomposed)).toBe(false);
  });
});
