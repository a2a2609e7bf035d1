import { PostroomError } from '../errors.js';
import type { NewInboxEvent } from './types.js';

/**
 * Why an ingress flush takes a transaction-level advisory lock on each event id before it writes.
 *
 * `INSERT … ON CONFLICT DO NOTHING` (and the exclusion constraint behind it) waits for any other transaction
 * that holds an uncommitted row with the same id. A flush whose connection hangs (its backend stopped, the
 * network silent mid-flush) keeps its rows uncommitted until it is killed; the service's redeliveries of those
 * events then reach every later flush, of this replica and of the others, and each would wait on it: one stuck
 * connection would stall every event. So each flush first tries a lock per id, in one statement, and never
 * waits for one: an id whose lock another flush holds is answered 503 with Retry-After at once
 * (EventInFlightError), and the rest are written. A flush that has all its locks can wait on nothing but
 * writers that take none (the reconciler's synthetic events, whose ids the service never sends).
 *
 * The key of an id is two 32-bit hashes of the schema and the id: Postgres's two-int4 advisory locks, a key
 * space apart from the single-bigint locks postroom takes by name (advisory-key.ts). Two ids that share a key
 * while both are being flushed cost one spurious 503, which the service retries; at about 2^-64 per pair of
 * ids in flight at the same moment, it does not happen.
 */

/** An id another flush is writing at this moment (its lock is held): answer 503, the sender's retry will settle it. */
export class EventInFlightError extends PostroomError {
  constructor(eventId: string) {
    super('event_in_flight', `event ${eventId} is being written by another flush; retry later`);
  }
}

/** The two halves of each id's lock key, in the order of the events given. */
export interface FlushLockKeys {
  high: Int32Array;
  low: Int32Array;
}

/** A seed per schema: two installations in one database do not share keys. */
export interface FlushLockSeed {
  high: number;
  low: number;
}

export function flushLockSeed(schema: string): FlushLockSeed {
  return { high: fnv1a(schema, 0x811c9dc5), low: fnv1a(schema, 0x01000193 ^ 0x5bd1e995) };
}

/** FNV-1a over UTF-16 code units from `basis`, then Murmur3's finaliser so every input bit reaches every output bit. */
function fnv1a(text: string, basis: number): number {
  let h = basis | 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

export function flushLockKeys(seed: FlushLockSeed, events: readonly NewInboxEvent[]): FlushLockKeys {
  const high = new Int32Array(events.length);
  const low = new Int32Array(events.length);
  for (let i = 0; i < events.length; i++) {
    const id = events[i]!.eventId;
    high[i] = fnv1a(id, seed.high);
    low[i] = fnv1a(id, seed.low);
  }
  return { high, low };
}

/** An int4[] literal for a statement parameter. */
export function int4Array(values: Int32Array): string {
  return `{${values.join(',')}}`;
}
