import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_BACKOFF, retryDelayMs } from '../../src/worker/backoff.js';

describe('retry backoff', () => {
  it('doubles per attempt up to the cap, before jitter', () => {
    const top = (attempt: number): number => retryDelayMs(attempt, () => 1, { baseMs: 1000, maxMs: 60_000 });
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(top)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('keeps at least half the delay fixed, so no retry comes early', () => {
    expect(retryDelayMs(3, () => 0, { baseMs: 1000, maxMs: 60_000 })).toBe(2000);
  });

  it('stays within [ceiling/2, ceiling] for any attempt and any random value, even absurd attempts', () => {
    fc.assert(
      fc.property(fc.integer({ min: -5, max: 10_000 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const d = retryDelayMs(attempt, () => r, DEFAULT_RETRY_BACKOFF);
        const ceiling = Math.min(DEFAULT_RETRY_BACKOFF.maxMs, DEFAULT_RETRY_BACKOFF.baseMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 40));
        expect(Number.isFinite(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(d).toBeLessThanOrEqual(ceiling);
      }),
    );
  });

  it('spreads a burst of failures of the same attempt', () => {
    const delays = new Set(Array.from({ length: 50 }, () => retryDelayMs(5, Math.random)));
    expect(delays.size).toBeGreaterThan(40);
  });
});
