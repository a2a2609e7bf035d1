import type { Config } from '../config/config.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { createApiClient, type ApiClient, type ApiClientOptions } from './client.js';
import { resolveApiKey } from './api-key.js';
import { readClientTls } from './dispatcher.js';

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
