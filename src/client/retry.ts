import type { BackoffPolicy } from '../backoff.js';

/** Statuses worth another attempt: throttling and the gateway/server failures that are usually transient. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

export const DEFAULT_BACKOFF: BackoffPolicy = { baseDelayMs: 250, maxDelayMs: 10_000, jitter: 'full' };

/**
 * Retry-After as seconds or an HTTP date, in milliseconds from `nowMs`.
 * Undefined when absent or unreadable (then our own backoff applies).
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
