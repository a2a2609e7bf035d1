import type { Config } from '../config/config.js';
import { createSecretCipher, parseEncryptionKey, type SecretCipher } from './crypto.js';

/** The cipher for stored endpoint secrets, or undefined when POSTROOM_ENCRYPTION_KEY is not set (then only configured secrets exist). */
export function secretCipherFromConfig(config: Config): SecretCipher | undefined {
  return config.encryptionKey === undefined ? undefined : createSecretCipher(parseEncryptionKey(config.encryptionKey));
}
