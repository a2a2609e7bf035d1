import type { Queryable } from '../db/types.js';

/** One endpoint's completeness watermark as stored, with the run that proved it. */
export interface CompletenessMark {
  plane: string;
  endpoint_id: string;
  complete_through: Date;
  run_id: number | null;
  proved_at: Date;
}

const MARK_COLUMNS = 'plane, endpoint_id, complete_through, run_id::int AS run_id, proved_at';

/** Every stored watermark, most lagging first, at most `limit` (the primary key; one row per plane and endpoint). */
export async function listCompleteness(q: Queryable, limit = 200): Promise<CompletenessMark[]> {
  const res = await q.query<CompletenessMark>(
    `SELECT ${MARK_COLUMNS} FROM reconcile_completeness ORDER BY complete_through, plane, endpoint_id LIMIT $1`,
    [limit],
  );
  return res.rows;
}

/** The stored watermarks of one plane's endpoints. */
export async function completenessOf(q: Queryable, plane: string, endpointIds: readonly string[]): Promise<Map<string, CompletenessMark>> {
  if (endpointIds.length === 0) return new Map();
  const res = await q.query<CompletenessMark>(
    `SELECT ${MARK_COLUMNS} FROM reconcile_completeness WHERE plane = $1 AND endpoint_id = ANY($2::text[])`,
    [plane, [...endpointIds]],
  );
  return new Map(res.rows.map((r) => [r.endpoint_id, r]));
}

/**
 * Stores a watermark a run proved, only forward: a value at or before the stored one changes nothing (not even
 * the run it names). True when it moved.
 */
export async function advanceCompleteness(
  q: Queryable,
  p: { plane: string; endpointId: string; completeThrough: Date; runId: number | null },
): Promise<boolean> {
  const res = await q.query(
    `INSERT INTO reconcile_completeness (plane, endpoint_id, complete_through, run_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (plane, endpoint_id) DO UPDATE SET complete_through = EXCLUDED.complete_through, run_id = EXCLUDED.run_id, proved_at = now()
     WHERE reconcile_completeness.complete_through < EXCLUDED.complete_through`,
    [p.plane, p.endpointId, p.completeThrough, p.runId],
  );
  return res.rowCount === 1;
}

/**
 * What open gaps of one endpoint hold its watermark back: the earliest delivery time among them from `from` on
 * (reconcile_gaps_open_endpoint_idx), and whether any has no delivery time at all (it could be anywhere).
 * Open gaps before the stored watermark cannot exist: it never passed one.
 */
export async function openGapPin(
  q: Queryable,
  endpointId: string,
  from: Date | null,
): Promise<{ earliest: Date | null; undated: boolean }> {
  const res = await q.query<{ earliest: Date | null; undated: boolean }>(
    `SELECT (SELECT min(delivery_created_at) FROM reconcile_gaps
              WHERE status = 'open' AND endpoint_id = $1 AND delivery_created_at >= COALESCE($2::timestamptz, '-infinity')) AS earliest,
            EXISTS (SELECT 1 FROM reconcile_gaps WHERE status = 'open' AND endpoint_id = $1 AND delivery_created_at IS NULL) AS undated`,
    [endpointId, from],
  );
  const row = res.rows[0];
  return { earliest: row?.earliest ?? null, undated: row?.undated ?? false };
}
