/** Injected wherever time matters, so tests can skew or freeze it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function fixedClock(ms: number): Clock & { set(ms: number): void; advance(ms: number): void } {
  let current = ms;
  return {
    now: () => current,
    set: (v) => {
      current = v;
    },
    advance: (d) => {
      current += d;
    },
  };
}
