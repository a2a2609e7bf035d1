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

export async function fillGaps(q: Queryable, gapIds: readonly number[], reason: string): Promise<number> {
  if (gapIds.length === 0) return 0;
  const res = await q.query(`UPDATE reconcile_gaps SET status = 'filled', resolved_at = now(), reason = $2 WHERE gap_id = ANY($1::bigint[]) AND status = 'open'`, [gapIds, reason]);
  return res.rowCount;
}

export async function setGapReason(q: Queryable, gapIds: readonly number[], reason: string): Promise<void> {
  if (gapIds.length === 0) return;
  await q.query(`UPDATE reconcile_gaps SET reason = $2 WHERE gap_id = ANY($1::bigint[]) AND status = 'open'`, [gapIds, reason]);
}

export async function openGaps(q: Queryable): Promise<Gap[]> {
  const res = await q.query<Gap>(`SELECT ${GAP_COLUMNS} FROM reconcile_gaps WHERE status = 'open' ORDER BY first_seen_at, gap_id`);
  return res.rows;
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
