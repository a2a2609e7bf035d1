import type { Queryable } from '../db/types.js';

/**
 * A webhook.test the probe asked for (src/probe) is no event of the organisation's: it is stored, so the probe
 * can see it, and marked processed without a handler. It is the probe's when its id is a probe's, or, in the
 * moment between asking the service and its answer naming the event, when a probe of unknown event was in
 * flight at the time it was received.
 */
export async function isProbeEvent(q: Queryable, eventId: string, receivedAt: Date): Promise<boolean> {
  const res = await q.query<{ probe: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM probe_runs WHERE event_id = $1)
         OR EXISTS (SELECT 1 FROM probe_runs WHERE finished_at IS NULL AND event_id IS NULL AND requested_at <= $2) AS probe`,
    [eventId, receivedAt],
  );
  return res.rows[0]?.probe === true;
}
