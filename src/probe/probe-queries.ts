import type { Queryable } from '../db/types.js';
import type { ProbeOutcome } from './defaults.js';
import { TEST_EVENT_TYPE } from '../events/type-names.js';

/**
 * Starts a probe of one endpoint unless one is in flight (probe_runs_in_flight_idx) or one began less than
 * `minIntervalMs` ago. A probe left unfinished for longer than `staleMs` (its process died) is closed first as
 * never delivered. The new probe's id, or why there is none.
 */
export async function startProbe(
  q: Queryable,
  p: { plane: string; endpointId: string; minIntervalMs: number; staleMs: number },
): Promise<{ probeId: number } | { skipped: 'in_flight' | 'too_soon' }> {
  await q.query(
    `UPDATE probe_runs SET finished_at = now(), outcome = 'never_delivered', detail = 'the probing process stopped before the probe finished'
     WHERE plane = $1 AND endpoint_id = $2 AND finished_at IS NULL AND requested_at <= now() - make_interval(secs => $3::double precision / 1000)`,
    [p.plane, p.endpointId, p.staleMs],
  );
  const res = await q.query<{ probe_id: number }>(
    `INSERT INTO probe_runs (plane, endpoint_id)
     SELECT $1, $2 WHERE NOT EXISTS (
       SELECT 1 FROM probe_runs WHERE plane = $1 AND endpoint_id = $2
         AND requested_at > now() - make_interval(secs => $3::double precision / 1000))
     ON CONFLICT (plane, endpoint_id) WHERE finished_at IS NULL DO NOTHING
     RETURNING probe_id::int AS probe_id`,
    [p.plane, p.endpointId, p.minIntervalMs],
  );
  if (res.rows[0]) return { probeId: Number(res.rows[0].probe_id) };
  const inFlight = await q.query(`SELECT 1 FROM probe_runs WHERE plane = $1 AND endpoint_id = $2 AND finished_at IS NULL`, [
    p.plane,
    p.endpointId,
  ]);
  return { skipped: inFlight.rows.length > 0 ? 'in_flight' : 'too_soon' };
}

/** The event the service named for a probe, so the worker can tell it apart. */
export async function recordProbeEvent(q: Queryable, probeId: number, eventId: string): Promise<void> {
  await q.query('UPDATE probe_runs SET event_id = $2 WHERE probe_id = $1', [probeId, eventId]);
}

export async function finishProbe(
  q: Queryable,
  p: { probeId: number; outcome: ProbeOutcome; roundTripMs: number | null; detail: string | null; eventId: string | null },
): Promise<void> {
  await q.query(
    `UPDATE probe_runs SET finished_at = now(), outcome = $2, round_trip_ms = $3, detail = $4, event_id = COALESCE(event_id, $5)
     WHERE probe_id = $1`,
    [p.probeId, p.outcome, p.roundTripMs, p.detail, p.eventId],
  );
}

/**
 * The probe's event as stored, and how long after the request (both on the database's clock): by its id when the
 * service named it, else the first webhook.test received since the request that no other probe claims.
 */
export async function storedProbeEvent(
  q: Queryable,
  p: { probeId: number; eventId: string | null },
): Promise<{ event_id: string; round_trip_ms: number } | undefined> {
  // Both reads name the partitions that can hold the row, pruned at run time: by the ledger's instant for the
  // id, or from the request's instant on. A probe polls until its event is stored, and a read of the id alone
  // probes every day's index on each poll.
  const res = p.eventId
    ? await q.query<{ event_id: string; round_trip_ms: number }>(
        `SELECT i.event_id, (extract(epoch FROM i.received_at - r.requested_at) * 1000)::int AS round_trip_ms
         FROM inbox i, probe_runs r
         WHERE i.event_id = $2 AND i.received_at = (SELECT l.received_at FROM inbox_ids l WHERE l.event_id = $2) AND r.probe_id = $1`,
        [p.probeId, p.eventId],
      )
    : await q.query<{ event_id: string; round_trip_ms: number }>(
        `SELECT i.event_id, (extract(epoch FROM i.received_at - r.requested_at) * 1000)::int AS round_trip_ms
         FROM probe_runs r JOIN inbox i ON i.type = '${TEST_EVENT_TYPE}' AND i.received_at >= r.requested_at
         WHERE r.probe_id = $1 AND i.received_at >= (SELECT s.requested_at FROM probe_runs s WHERE s.probe_id = $1)
           AND NOT EXISTS (SELECT 1 FROM probe_runs o WHERE o.event_id = i.event_id AND o.probe_id <> $1)
         ORDER BY i.received_at LIMIT 1`,
        [p.probeId],
      );
  const row = res.rows[0];
  return row ? { event_id: row.event_id, round_trip_ms: Math.max(0, Number(row.round_trip_ms)) } : undefined;
}

/** The last finished probe of each plane and endpoint, and when one last succeeded (at most `limit`). */
export interface ProbeStatus {
  plane: string;
  endpoint_id: string;
  outcome: ProbeOutcome;
  finished_at: Date;
  round_trip_ms: number | null;
  detail: string | null;
  last_ok_at: Date | null;
}

/**
 * Per plane and endpoint, read through probe_runs_endpoint_idx: the distinct endpoints by a skip scan, then for
 * each its newest finished probe and its newest successful one. A scrape reads this, so nothing scans the table.
 */
export async function latestProbes(q: Queryable, limit = 200): Promise<ProbeStatus[]> {
  const res = await q.query<ProbeStatus>(
    `WITH RECURSIVE keys AS (
       (SELECT plane, endpoint_id FROM probe_runs ORDER BY plane, endpoint_id LIMIT 1)
       UNION ALL
       SELECT n.plane, n.endpoint_id FROM keys k, LATERAL (
         SELECT plane, endpoint_id FROM probe_runs WHERE (plane, endpoint_id) > (k.plane, k.endpoint_id)
         ORDER BY plane, endpoint_id LIMIT 1) n
     )
     SELECT k.plane, k.endpoint_id, last.outcome, last.finished_at, last.round_trip_ms, last.detail, ok.finished_at AS last_ok_at
     FROM (SELECT * FROM keys LIMIT $1) k
     CROSS JOIN LATERAL (
       SELECT outcome, finished_at, round_trip_ms, detail FROM probe_runs r
       WHERE r.plane = k.plane AND r.endpoint_id = k.endpoint_id AND r.finished_at IS NOT NULL
       ORDER BY r.requested_at DESC LIMIT 1) last
     LEFT JOIN LATERAL (
       SELECT finished_at FROM probe_runs r
       WHERE r.plane = k.plane AND r.endpoint_id = k.endpoint_id AND r.outcome = 'ok'
       ORDER BY r.requested_at DESC LIMIT 1) ok ON true
     ORDER BY k.plane, k.endpoint_id`,
    [limit],
  );
  return res.rows;
}

/** Probes of one endpoint older than `keepMs` go: a schedule every minute keeps about 43,000 rows an endpoint a month. */
export async function pruneProbes(q: Queryable, p: { plane: string; endpointId: string; keepMs: number }): Promise<void> {
  await q.query(
    `DELETE FROM probe_runs WHERE plane = $1 AND endpoint_id = $2 AND finished_at IS NOT NULL
       AND requested_at < now() - make_interval(secs => $3::double precision / 1000)`,
    [p.plane, p.endpointId, p.keepMs],
  );
}
