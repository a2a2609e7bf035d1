import { createHash } from 'node:crypto';
import type { Queryable } from '../db/types.js';
import type { Consumption } from '../events/registry.js';

/**
 * Records which event types this worker's configuration consumes, so the
 * reconciler (often another process: `postroom reconcile`) can tell a missed
 * event nobody reads from one a handler needs. Replicas with the same handlers
 * share a row; a configuration stays on record (the safe direction: a gap of a
 * type once consumed is never closed as not consumed).
 */
export async function recordConsumption(q: Queryable, c: Consumption): Promise<void> {
  const key = createHash('sha256')
    .update(JSON.stringify([c.everyType, c.unknownTypes, [...c.types].sort()]))
    .digest('hex')
    .slice(0, 32);
  await q.query(
    `INSERT INTO event_consumers (consumer_key, types, every_type, unknown_types) VALUES ($1, $2::text[], $3, $4)
     ON CONFLICT (consumer_key) DO UPDATE SET seen_at = now()`,
    [key, c.types, c.everyType, c.unknownTypes],
  );
}

export interface RecordedConsumption {
  types: Set<string>;
  everyType: boolean;
  unknownTypes: boolean;
}

export async function readConsumption(q: Queryable): Promise<RecordedConsumption> {
  const res = await q.query<{ types: string[]; every_type: boolean; unknown_types: boolean }>(
    'SELECT types, every_type, unknown_types FROM event_consumers',
  );
  const out: RecordedConsumption = { types: new Set(), everyType: false, unknownTypes: false };
  for (const r of res.rows) {
    for (const t of r.types) out.types.add(t);
    out.everyType ||= r.every_type;
    out.unknownTypes ||= r.unknown_types;
  }
  return out;
}
