export interface RetryBackoff {
  /** Delay before the second attempt, before jitter. */
  baseMs: number;
  /** Upper bound of any delay. */
  maxMs: number;
}

export const DEFAULT_RETRY_BACKOFF: RetryBackoff = { baseMs: 1000, maxMs: 60 * 60 * 1000 };

/**
 * Delay before the next attempt after `attempt` failed (attempt 1 = the first
 * try): exponential, capped, with "equal jitter" — half the delay fixed, half
 * random — so a burst of failures spreads out without any retry coming
 * suspiciously early.
 */
export function retryDelayMs(attempt: number, random: () => number, policy: RetryBackoff = DEFAULT_RETRY_BACKOFF): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 40);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
