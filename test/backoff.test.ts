import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay, type BackoffPolicy } from '../src/backoff.js';
import { DEFAULT_BACKOFF } from '../src/client/retry.js';
import { DEFAULT_RETRY_BACKOFF, withEqualJitter } from '../src/worker/backoff.js';

const bound = (attempt: number, p: BackoffPolicy): number =>
  Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 40));

describe('one backoff for the client and the worker', () => {
  it('doubles per attempt up to the cap', () => {
    const top = (attempt: number): number => backoffDelay(attempt, () => 1, { baseDelayMs: 1000, maxDelayMs: 60_000, jitter: 'equal' });
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(top)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('equal jitter keeps at least half the delay fixed, so no worker retry comes early', () => {
    expect(backoffDelay(3, () => 0, { baseDelayMs: 1000, maxDelayMs: 60_000, jitter: 'equal' })).toBe(2000);
  });

  it('full jitter may retry at once, so clients that failed together spread out', () => {
    expect(backoffDelay(3, () => 0, { baseDelayMs: 1000, maxDelayMs: 60_000, jitter: 'full' })).toBe(0);
    expect(backoffDelay(3, () => 0, { baseDelayMs: 1000, maxDelayMs: 60_000 })).toBe(0);
  });

  it('the worker takes equal jitter unless a policy names its own; the client takes full', () => {
    expect(DEFAULT_RETRY_BACKOFF.jitter).toBe('equal');
    expect(DEFAULT_BACKOFF.jitter).toBe('full');
    expect(withEqualJitter({ baseDelayMs: 5, maxDelayMs: 5 }).jitter).toBe('equal');
    expect(withEqualJitter({ baseDelayMs: 5, maxDelayMs: 5, jitter: 'full' }).jitter).toBe('full');
  });

  it('stays within its jitter range for any attempt and random value, even absurd attempts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -5, max: 10_000 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        fc.constantFrom(DEFAULT_RETRY_BACKOFF, DEFAULT_BACKOFF),
        (attempt, r, policy) => {
          const d = backoffDelay(attempt, () => r, policy);
          const top = bound(attempt, policy);
          expect(Number.isFinite(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(policy.jitter === 'equal' ? Math.floor(top / 2) : 0);
          expect(d).toBeLessThanOrEqual(top);
        },
      ),
    );
  });

  it('spreads a burst of failures of the same attempt', () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(5, Math.random, DEFAULT_RETRY_BACKOFF)));
    expect(delays.size).toBeGreaterThan(40);
  });
});
