import type { BackoffPolicy } from '../backoff.js';

/** A failed event waits 1 s, 2 s, 4 s … up to an hour; half of each delay is fixed, so no retry comes early. */
export const DEFAULT_RETRY_BACKOFF: BackoffPolicy = { baseDelayMs: 1000, maxDelayMs: 60 * 60 * 1000, jitter: 'equal' };

/** The worker's and forwarder's jitter unless a policy names its own: a retry re-runs a handler, so none comes early. */
export function withEqualJitter(policy: BackoffPolicy): BackoffPolicy {
  return policy.jitter ? policy : { ...policy, jitter: 'equal' };
}
