export { createSecretCipher, parseEncryptionKey, keyFingerprint, SecretDecryptError, CIPHER_VERSION, type SecretCipher, type EncryptedSecret } from './crypto.js';
export {
  SECRETS_CHANNEL,
  recordEndpoint,
  saveEndpointSecret,
  loadEndpointSecrets,
  describeEndpointSecrets,
  retireEndpoint,
  updateKnownEndpoint,
  listKnownEndpoints,
  pruneExpiredSecrets,
  type EndpointRecord,
  type KnownEndpoint,
  type StoredSecret,
  type StoredSecretInfo,
  type SaveSecretInput,
  type SecretState,
} from './store.js';
export { createEndpointSecretProvider, DEFAULT_SECRET_CACHE_TTL_MS, type EndpointSecretProvider, type EndpointSecretProviderOptions } from './provider.js';
export { secretCipherFromConfig } from './from-config.js';
