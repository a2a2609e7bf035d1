import type { Config } from '../config/config.js';
import { ConfigError } from '../errors.js';
import { readSettingFile } from './setting-file.js';

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
