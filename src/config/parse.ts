import { ConfigError } from '../errors.js';
import type { Env } from './env.js';

/** Small, explicit parsers: each error names the setting and what it accepts. */

export function str(env: Env, name: string): string | undefined {
  const v = env[name];
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}

export function int(env: Env, name: string, fallback: number, bounds: { min: number; max: number }): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  return parseIntSetting(name, raw, bounds);
}

export function parseIntSetting(name: string, raw: string, bounds: { min: number; max: number }): number {
  if (!/^-?\d+$/.test(raw))
    throw new ConfigError(name, `expected a whole number from ${bounds.min} to ${bounds.max}, got "${truncate(raw)}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < bounds.min || n > bounds.max) {
    throw new ConfigError(name, `expected a whole number from ${bounds.min} to ${bounds.max}, got ${truncate(raw)}`);
  }
  return n;
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `expected one of ${allowed.join(' | ')}, got "${truncate(raw)}"`);
  }
  return raw as T;
}

export function list(env: Env, name: string): string[] {
  const raw = str(env, name);
  if (raw === undefined) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `expected an absolute URL (${protocols.join(' or ')}), got something that is not a URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `expected a URL starting with ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

/** Values may be secrets, so error messages show only a short prefix. */
function truncate(raw: string): string {
  return raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
}
