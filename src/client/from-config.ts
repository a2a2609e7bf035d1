import type { Config } from '../config/config.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { createApiClient, type ApiClient, type ApiClientOptions } from './client.js';
import { readClientTls, readSettingFile } from './dispatcher.js';

/** The key from POSTROOM_API_KEY or the file POSTROOM_API_KEY_FILE names (mounted secrets), never both. */
export function resolveApiKey(config: Config): string {
  const { apiKey, apiKeyFile } = config.api;
  if (apiKey !== undefined && apiKeyFile !== undefined) {
    throw new ConfigError(
      'POSTROOM_API_KEY_FILE',
      'both POSTROOM_API_KEY and POSTROOM_API_KEY_FILE are set; keep one so there is no doubt which key is used',
    );
  }
  if (apiKeyFile !== undefined) {
    const key = readSettingFile('POSTROOM_API_KEY_FILE', apiKeyFile).toString('utf8').trim();
    if (key === '') throw new ConfigError('POSTROOM_API_KEY_FILE', `${apiKeyFile} is empty`);
    return key;
  }
  if (apiKey === undefined)
    throw new ConfigError(
      'POSTROOM_API_KEY',
      'no API key configured; set POSTROOM_API_KEY (or POSTROOM_API_KEY_FILE) to a key from the portal',
    );
  return apiKey;
}

export function createApiClientFromConfig(
  config: Config,
  deps: { logger?: Logger; metrics?: Metrics } & Pick<
    ApiClientOptions,
    'dispatcher' | 'clock' | 'sleep' | 'random' | 'onCorrespondenceCreated'
  > = {},
): ApiClient {
  const baseUrl = config.api.baseUrl;
  if (baseUrl === undefined)
    throw new ConfigError('POSTROOM_API_BASE_URL', "not set; set it to the service's base address (the part before /sender/v2)");
  const apiKey = resolveApiKey(config);
  const tls = deps.dispatcher
    ? undefined
    : readClientTls({ certFile: config.api.clientCertFile, keyFile: config.api.clientKeyFile, caFile: config.api.caFile });
  return createApiClient({
    ...deps,
    baseUrl,
    apiKey,
    correspondencePath: config.api.correspondencePath,
    maxAttempts: config.api.maxAttempts,
    deadlineMs: config.api.deadlineMs,
    timeouts: { connectMs: config.api.connectTimeoutMs, headersMs: config.api.headersTimeoutMs, bodyMs: config.api.bodyTimeoutMs },
    ...(tls ? { tls } : {}),
  });
}
