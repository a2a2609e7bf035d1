import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { SecretDecryptError, createSecretCipher, keyFingerprint, parseEncryptionKey } from '../../src/secrets/crypto.js';

const SECRET = 'whsec_test_0123456789abcdef';

describe('endpoint secret encryption', () => {
  const key = randomBytes(32);
  const cipher = createSecretCipher(key);

  it('round-trips a secret and never stores it in the clear', () => {
    const sealed = cipher.encrypt('ep_1', SECRET);
    expect(sealed.ciphertext.toString('utf8')).not.toContain(SECRET);
    expect(sealed.ciphertext.toString('hex')).not.toContain(Buffer.from(SECRET).toString('hex'));
    expect(sealed.nonce).toHaveLength(12);
    expect(sealed.tag).toHaveLength(16);
    expect(sealed.keyId).toBe(keyFingerprint(key));
    expect(cipher.decrypt('ep_1', sealed)).toBe(SECRET);
  });

  it('uses a fresh nonce each time', () => {
    const a = cipher.encrypt('ep_1', SECRET);
    const b = cipher.encrypt('ep_1', SECRET);
    expect(a.nonce.equals(b.nonce)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
  });

  it('binds the endpoint id: a ciphertext moved to another endpoint does not open', () => {
    const sealed = cipher.encrypt('ep_1', SECRET);
    expect(() => cipher.decrypt('ep_2', sealed)).toThrow(SecretDecryptError);
  });

  it('refuses a tampered ciphertext or tag', () => {
    const sealed = cipher.encrypt('ep_1', SECRET);
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[0] = flipped[0]! ^ 1;
    expect(() => cipher.decrypt('ep_1', { ...sealed, ciphertext: flipped })).toThrow(/failed authentication/);
    const tag = Buffer.from(sealed.tag);
    tag[3] = tag[3]! ^ 0x80;
    expect(() => cipher.decrypt('ep_1', { ...sealed, tag })).toThrow(SecretDecryptError);
  });

  it('names both key fingerprints when the configured key is not the one that sealed it, without the secret', () => {
    const sealed = cipher.encrypt('ep_1', SECRET);
    const other = createSecretCipher(randomBytes(32));
    let err: unknown;
    try {
      other.decrypt('ep_1', sealed);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SecretDecryptError);
    const text = `${(err as Error).message} ${JSON.stringify(err)}`;
    expect(text).toContain(cipher.keyId);
    expect(text).toContain(other.keyId);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(key.toString('hex'));
  });

  it('parses the key as hex or base64 and refuses anything else without echoing it', () => {
    expect(parseEncryptionKey(key.toString('hex')).equals(key)).toBe(true);
    expect(parseEncryptionKey(key.toString('base64')).equals(key)).toBe(true);
    expect(() => parseEncryptionKey('tooshort')).toThrow(ConfigError);
    const bad = 'x'.repeat(63);
    try {
      parseEncryptionKey(bad);
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).toMatch(/POSTROOM_ENCRYPTION_KEY/);
      expect((e as Error).message).not.toContain(bad);
    }
  });
});
