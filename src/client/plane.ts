import { ConfigError } from '../errors.js';
import type { Plane } from './types.js';

export const PLANE_PREFIXES: ReadonlyArray<readonly [string, Plane]> = [
  ['svc_sandbox_', 'sandbox'],
  ['svc_live_', 'live'],
];

/**
 * The key sent selects the plane, so we read it from the prefix up front: a key
 * of any other shape is a configuration mistake, found at start rather than as a
 * 401 mid-run. The message never contains the key, not even a part of it.
 */
export function planeFromKey(apiKey: string, setting = 'POSTROOM_API_KEY'): Plane {
  for (const [prefix, plane] of PLANE_PREFIXES) {
    if (apiKey.startsWith(prefix) && apiKey.length > prefix.length) return plane;
  }
  throw new ConfigError(
    setting,
    `expected an API key starting with svc_sandbox_ (sandbox plane) or svc_live_ (live plane); the key given has neither prefix`,
  );
}
