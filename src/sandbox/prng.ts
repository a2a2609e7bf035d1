/**
 * Seeded randomness. Fault decisions use `uniform(seed, …parts)`, a pure hash of the
 * seed and the decision's coordinates (delivery sequence, attempt, purpose), so the
 * same seed gives the same decisions however requests interleave in time. The
 * traffic generator, which decides one step after another, uses the stream.
 */

/** murmur3's 32-bit finaliser: cheap and well mixed. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A number in [0, 1) determined only by the seed and the parts. */
export function uniform(seed: number, ...parts: number[]): number {
  let h = fmix32((seed >>> 0) ^ 0x9e3779b9);
  for (const p of parts) h = fmix32((h ^ Math.imul((p >>> 0) + 0x7f4a7c15, 0x27d4eb2f)) >>> 0);
  return h / 0x1_0000_0000;
}

export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Whole number in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Picks a key with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K;
}

/** mulberry32: small, fast, good enough for simulation. */
export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)] as T;
    },
    weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
      const entries = Object.entries(weights) as Array<[K, number]>;
      const total = entries.reduce((s, [, w]) => s + Math.max(0, w), 0);
      if (total <= 0) throw new RangeError('every weight is zero');
      let r = next() * total;
      for (const [k, w] of entries) {
        r -= Math.max(0, w);
        if (r < 0) return k;
      }
      return entries[entries.length - 1]![0];
    },
  };
}

/** A random 32-bit seed, for when the caller gives none (it is reported so a run can be repeated). */
export function randomSeed(): number {
  return Math.floor(Math.random() * 0x1_0000_0000) >>> 0;
}
