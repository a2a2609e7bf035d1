import { randomBytes } from 'node:crypto';

/**
 * Ids are `<prefix>_<instance>_<sequence>`. The per-instance part is random even with
 * a seed: a restarted sandbox must never reuse an event_id a receiver already stored
 * (it would be de-duplicated away and look lost). The sequence is zero-padded base 36,
 * so ids of one kind sort in creation order, which the delivery list relies on for ties.
 */
export interface IdFactory {
  next(prefix: string): string;
  /** The sequence number the next id of this prefix will carry. */
  peek(prefix: string): number;
  readonly instance: string;
}

export function createIdFactory(instance: string = randomInstance()): IdFactory {
  const counters = new Map<string, number>();
  return {
    instance,
    next(prefix) {
      const n = (counters.get(prefix) ?? 0) + 1;
      counters.set(prefix, n);
      return `${prefix}_${instance}_${n.toString(36).padStart(8, '0')}`;
    },
    peek: (prefix) => (counters.get(prefix) ?? 0) + 1,
  };
}

function randomInstance(): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz';
  return Array.from(randomBytes(6), (b) => alphabet[b % 36]).join('');
}

/** Random opaque token (secrets, keys): hex of `bytes` random bytes. */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
