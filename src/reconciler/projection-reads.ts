import type { Queryable } from '../db/types.js';

/**
 * What a re-read must cover: every correspondence that can still change (not
 * sealed or withdrawn, or known only from the sent ledger), plus final ones that
 * saw events since `changedSince` (an event before the final one may have been missed).
 */
export async function rereadCandidates(q: Queryable, changedSince: Date | null): Promise<string[]> {
  const res = await q.query<{ correspondence_id: string }>(
    `SELECT correspondence_id FROM correspondence_projection WHERE status_rank < 2
     UNION
     SELECT s.correspondence_id FROM sent_correspondence s
       WHERE NOT EXISTS (SELECT 1 FROM correspondence_projection p WHERE p.correspondence_id = s.correspondence_id AND p.status_rank >= 2)
     UNION
     SELECT correspondence_id FROM correspondence_projection WHERE status_rank >= 2 AND $1::timestamptz IS NOT NULL AND updated_at >= $1::timestamptz
     ORDER BY 1`,
    [changedSince],
  );
  return res.rows.map((r) => r.correspondence_id);
}
