import type { Queryable } from '../db/types.js';

/** The projection of one correspondence, in the shape of GET /correspondence/{id}. */
export interface ProjectedCorrespondence {
  correspondence_id: string;
  status: string | null;
  participants: Array<{ participant_id: string; ref: string | null; state: string; last_act: string | null; last_act_at: Date | null }>;
  send_summary: { delivered: number; held: number; undeliverable: number; total: number } | null;
}

export async function readProjection(q: Queryable, correspondenceId: string): Promise<ProjectedCorrespondence | undefined> {
  const c = await q.query<{ status: string | null; d: number | null; h: number | null; u: number | null; t: number | null }>(
    `SELECT status, summary_delivered AS d, summary_held AS h, summary_undeliverable AS u, summary_total AS t
     FROM correspondence_projection WHERE correspondence_id = $1`,
    [correspondenceId],
  );
  const row = c.rows[0];
  if (!row) return undefined;
  const p = await q.query<ProjectedCorrespondence['participants'][number]>(
    'SELECT participant_id, ref, state, last_act, last_act_at FROM participant_projection WHERE correspondence_id = $1 ORDER BY participant_id',
    [correspondenceId],
  );
  return {
    correspondence_id: correspondenceId,
    status: row.status,
    participants: p.rows,
    send_summary: row.t === null ? null : { delivered: Number(row.d), held: Number(row.h), undeliverable: Number(row.u), total: Number(row.t) },
  };
}

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
