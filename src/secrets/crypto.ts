import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { ConfigError, PostroomError } from '../errors.js';

/** Bumped if the algorithm or the AAD layout ever changes; stored with every row. */
export const CIPHER_VERSION = 1;
const ALGORITHM = 'aes-256-gcm';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface EncryptedSecret {
  ciphertext: Buffer;
  nonce: Buffer;
  tag: Buffer;
  /** Which encryption key sealed it (a fingerprint, not the key). */
  keyId: string;
  version: number;
}

export interface SecretCipher {
  readonly keyId: string;
  encrypt(endpointId: string, secret: string): EncryptedSecret;
  decrypt(endpointId: string, sealed: EncryptedSecret): string;
}

/** A stored secret that does not open with the configured key: wrong key, or the row was tampered with. */
export class SecretDecryptError extends PostroomError {
  constructor(endpointId: string, message: string, options: { cause?: unknown } = {}) {
    super('secret_decrypt_failed', message, { ...options, details: { endpoint_id: endpointId } });
  }
}

/** POSTROOM_ENCRYPTION_KEY: 32 bytes as 64 hex characters or as base64. */
export function parseEncryptionKey(raw: string): Buffer {
  const text = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const key = Buffer.from(text, 'base64');
    if (key.length === 32) return key;
  }
  throw new ConfigError(
    'POSTROOM_ENCRYPTION_KEY',
    'expected 32 random bytes as 64 hex characters or base64 (generate one with `openssl rand -hex 32`)',
  );
}

/**
 * A short public fingerprint of the key, stored with each row so a key change is
 * reported as "sealed with k1:…, configured k1:…" rather than a bare auth failure.
 * An HMAC under the key itself, so it reveals nothing usable about the key.
 */
export function keyFingerprint(key: Buffer): string {
  return `k${CIPHER_VERSION}:${createHmac('sha256', key).update('postroom endpoint-secret key id').digest('hex').slice(0, 16)}`;
}

/** The endpoint id is bound as additional data: a ciphertext copied to another endpoint's row does not open. */
function aad(endpointId: string): Buffer {
  return Buffer.from(`postroom/endpoint-secret/v${CIPHER_VERSION}\u0000${endpointId}`, 'utf8');
}

/** AES-256-GCM with a fresh random 96-bit nonce per secret (a few secrets per endpoint: no nonce-reuse risk). */
export function createSecretCipher(key: Buffer): SecretCipher {
  if (key.length !== 32) throw new ConfigError('POSTROOM_ENCRYPTION_KEY', 'expected exactly 32 bytes');
  const keyId = keyFingerprint(key);
  return {
    keyId,
    encrypt(endpointId, secret) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(endpointId));
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return { ciphertext, nonce, tag: cipher.getAuthTag(), keyId, version: CIPHER_VERSION };
    },
    decrypt(endpointId, sealed) {
      if (sealed.version !== CIPHER_VERSION) {
        throw new SecretDecryptError(
          endpointId,
          `the stored secret of endpoint ${endpointId} uses format version ${sealed.version}, which this build does not know`,
        );
      }
      if (sealed.keyId !== keyId) {
        throw new SecretDecryptError(
          endpointId,
          `the stored secret of endpoint ${endpointId} was sealed with encryption key ${sealed.keyId}, but POSTROOM_ENCRYPTION_KEY is ${keyId}; configure the key it was stored with, or rotate the endpoint's secret`,
        );
      }
      try {
        const decipher = createDecipheriv(ALGORITHM, key, sealed.nonce, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(endpointId));
        decipher.setAuthTag(sealed.tag);
        return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
      } catch (err) {
        throw new SecretDecryptError(
          endpointId,
          `the stored secret of endpoint ${endpointId} failed authentication (altered, or moved from another endpoint's row)`,
          { cause: err },
        );
      }
    },
  };
}
