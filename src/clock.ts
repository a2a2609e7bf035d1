/** Injected wherever time matters, so tests can skew or freeze it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock offset from the system clock; used to simulate skew between replicas. */
export function offsetClock(offsetMs: number, base: Clock = systemClock): Clock {
  return { now: () => base.now() + offsetMs };
}

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
