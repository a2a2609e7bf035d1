/**
 * One backoff vocabulary for everything in postroom that tries again: the API
 * client's requests, the worker's failed events, the forwarder's posts.
 */
export interface BackoffPolicy {
  /** The delay bound after the first failure; it doubles with each further failure. */
  baseDelayMs: number;
  /** No single delay exceeds this, however many attempts. */
  maxDelayMs: number;
  /**
   * `full`: a uniform draw from 0 to the bound, so callers that failed together
   * do not retry together (the API client's default). `equal`: half the bound
   * fixed, half random, so no retry comes suspiciously early (the worker's and
   * the forwarder's default, where a retry re-runs a handler).
   */
  jitter?: 'full' | 'equal';
}

/**
 * Delay before the next attempt after attempt `attempt` (from 1) failed:
 * exponential, capped, jittered. Absurd attempt numbers stay finite.
 */
export function backoffDelay(attempt: number, random: () => number, policy: BackoffPolicy): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 40);
  const bound = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  if ((policy.jitter ?? 'full') === 'equal') return Math.round(bound / 2 + random() * (bound / 2));
  return Math.floor(random() * bound);
}
