import type { Queryable } from '../db/types.js';

export type GapStatus = 'open' | 'filled' | 'ignored';

export interface Gap {
  gap_id: number;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  delivery_id: string;
  delivery_created_at: Date | null;
  last_error: string;
  correspondence_id: string | null;
  status: GapStatus;
  reason: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  resolved_at: Date | null;
}

export interface NewGap {
  eventId: string;
  eventType: string;
  endpointId: string;
  deliveryId: string;
  deliveryCreatedAt: string | null;
  lastError: string;
  correspondenceId: string | null;
  reason: string | null;
}

const GAP_COLUMNS = `gap_id::int AS gap_id, event_id, event_type, endpoint_id, delivery_id, delivery_created_at, last_error,
  correspondence_id, status, reason, first_seen_at, last_seen_at, resolved_at`;

/** Records gaps; a gap seen again only has last_seen_at bumped. Returns how many were new. */
export async function upsertGaps(q: Queryable, gaps: readonly NewGap[]): Promise<number> {
  if (gaps.length === 0) return 0;
  const res = await q.query<{ inserted: boolean }>(
    `INSERT INTO reconcile_gaps (event_id, event_type, endpoint_id, delivery_id, delivery_created_at, last_error, correspondence_id, reason)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[], $8::text[])
     ON CONFLICT (event_id) DO UPDATE SET last_seen_at = now(),
       correspondence_id = COALESCE(reconcile_gaps.correspondence_id, EXCLUDED.correspondence_id)
     RETURNING (xmax = 0) AS inserted`,
    [
      gaps.map((g) => g.eventId),
      gaps.map((g) => g.eventType),
      gaps.map((g) => g.endpointId),
      gaps.map((g) => g.deliveryId),
      gaps.map((g) => g.deliveryCreatedAt),
      gaps.map((g) => g.lastError),
      gaps.map((g) => g.correspondenceId),
      gaps.map((g) => g.reason),
    ],
  );
  return res.rows.filter((r) => r.inserted).length;
}

/** Open gaps whose event has since reached the inbox (a redelivery, a replay): nothing is missing any more. */
export async function fillGapsReceivedLater(q: Queryable): Promise<number> {
  const res = await q.query(
    `UPDATE reconcile_gaps g SET status = 'filled', resolved_at = now(), reason = 'the event reached the inbox after the gap was found'
     WHERE g.status = 'open' AND EXISTS (SELECT 1 FROM inbox i WHERE i.event_id = g.event_id)`,
  );
  return res.rowCount;
}

/**
 * What pass 2 needs to know about open gaps, computed in the database so memory
 * stays flat however many there are: the earliest delivery among them and the
 * correspondence ids some of them name.
 */
export async function openGapOutline(q: Queryable): Promise<{ earliestDelivery: Date | null; correspondenceIds: string[] }> {
  const first = await q.query<{ earliest: Date | null }>(`SELECT min(delivery_created_at) AS earliest FROM reconcile_gaps WHERE status = 'open'`);
  const ids = await q.query<{ correspondence_id: string }>(
    `SELECT DISTINCT correspondence_id FROM reconcile_gaps WHERE status = 'open' AND correspondence_id IS NOT NULL`,
  );
  return { earliestDelivery: first.rows[0]?.earliest ?? null, correspondenceIds: ids.rows.map((r) => r.correspondence_id) };
}

/**
 * Fills the open gaps a re-read covered: those naming a correspondence that was
 * re-read, and, when the re-read was complete, those naming none. Only gaps seen
 * before the re-read started and of correspondence-scoped types qualify.
 */
export async function fillCoveredGaps(
  q: Queryable,
  p: { scopedTypes: readonly string[]; seenBefore: Date; rereadIds: readonly string[]; complete: boolean; reason: string },
): Promise<number> {
  const res = await q.query(
    `UPDATE reconcile_gaps SET status = 'filled', resolved_at = now(), reason = $5
     WHERE status = 'open' AND event_type = ANY($1::text[]) AND first_seen_at <= $2
       AND (correspondence_id = ANY($3::text[]) OR ($4 AND correspondence_id IS NULL))`,
    [p.scopedTypes, p.seenBefore, p.rereadIds, p.complete, p.reason],
  );
  return res.rowCount;
}

/** Says why the remaining correspondence-scoped gaps are still open. */
export async function explainUncoveredGaps(q: Queryable, scopedTypes: readonly string[], seenBefore: Date, reason: string): Promise<void> {
  await q.query(`UPDATE reconcile_gaps SET reason = $3 WHERE status = 'open' AND event_type = ANY($1::text[]) AND first_seen_at <= $2 AND reason IS DISTINCT FROM $3`, [
    scopedTypes,
    seenBefore,
    reason,
  ]);
}

export async function countOpenGaps(q: Queryable): Promise<number> {
  const res = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM reconcile_gaps WHERE status = 'open'`);
  return Number(res.rows[0]?.n ?? 0);
}

export async function listGaps(q: Queryable, filter: { status?: GapStatus | undefined; limit: number }): Promise<Gap[]> {
  const res = await q.query<Gap>(
    `SELECT ${GAP_COLUMNS} FROM reconcile_gaps ${filter.status ? 'WHERE status = $2' : ''} ORDER BY first_seen_at DESC, gap_id DESC LIMIT $1`,
    filter.status ? [filter.limit, filter.status] : [filter.limit],
  );
  return res.rows;
}

/** By gap id or by event id, whichever the on-call engineer has at hand. */
export async function getGap(q: Queryable, idOrEventId: string): Promise<Gap | undefined> {
  const byId = /^\d{1,18}$/.test(idOrEventId);
  const res = await q.query<Gap>(`SELECT ${GAP_COLUMNS} FROM reconcile_gaps WHERE ${byId ? 'gap_id = $1::bigint' : 'event_id = $1'}`, [idOrEventId]);
  return res.rows[0];
}

export async function ignoreGap(q: Queryable, gapId: number, reason: string): Promise<Gap | undefined> {
  const res = await q.query<Gap>(
    `UPDATE reconcile_gaps SET status = 'ignored', resolved_at = now(), reason = $2 WHERE gap_id = $1 AND status = 'open' RETURNING ${GAP_COLUMNS}`,
    [gapId, reason],
  );
  return res.rows[0];
}
