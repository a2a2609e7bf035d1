import { Agent } from 'undici';
import { ConfigError } from '../errors.js';
import { readSettingFile } from './setting-file.js';
import type { Timeouts } from './http.js';

/** Tier-1 senders: the gateway checks a client certificate in addition to the key. */
export interface ClientTls {
  /** Client certificate and its key, always together. */
  cert?: string | Buffer | undefined;
  key?: string | Buffer | undefined;
  /** Extra CA bundle to trust for the service (a private gateway CA); the system store otherwise. */
  ca?: string | Buffer | undefined;
}

/**
 * An Agent whose limits fit an API client: undici's defaults wait 300 s for
 * headers and body, far longer than any caller of ours can afford.
 */
export function createApiDispatcher(options: { timeouts: Timeouts; tls?: ClientTls | undefined }): Agent {
  const { timeouts, tls } = options;
  if (tls && Boolean(tls.cert) !== Boolean(tls.key))
    throw new ConfigError('tls', 'a client certificate needs its private key and the other way round: give both cert and key');
  return new Agent({
    connect: {
      timeout: timeouts.connectMs,
      ...(tls?.cert ? { cert: tls.cert, key: tls.key } : {}),
      ...(tls?.ca ? { ca: tls.ca } : {}),
    },
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
    keepAliveTimeout: 10_000,
  });
}

/** Reads the certificate files named in config; each error names the setting. */
export function readClientTls(files: {
  certFile?: string | undefined;
  keyFile?: string | undefined;
  caFile?: string | undefined;
}): ClientTls | undefined {
  if (!files.certFile && !files.keyFile) {
    return files.caFile ? { ca: readSettingFile('POSTROOM_API_CA_FILE', files.caFile) } : undefined;
  }
  if (!files.certFile)
    throw new ConfigError(
      'POSTROOM_API_CLIENT_CERT_FILE',
      'POSTROOM_API_CLIENT_KEY_FILE is set, so the matching certificate file is needed too',
    );
  if (!files.keyFile)
    throw new ConfigError(
      'POSTROOM_API_CLIENT_KEY_FILE',
      'POSTROOM_API_CLIENT_CERT_FILE is set, so the matching private key file is needed too',
    );
  return {
    cert: readSettingFile('POSTROOM_API_CLIENT_CERT_FILE', files.certFile),
    key: readSettingFile('POSTROOM_API_CLIENT_KEY_FILE', files.keyFile),
    ca: files.caFile ? readSettingFile('POSTROOM_API_CA_FILE', files.caFile) : undefined,
  };
}
