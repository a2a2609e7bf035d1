import type { SendSummary } from '../client/types.js';
import type { Queryable } from '../db/types.js';

export type { SendSummary };

/** A correspondence as postroom's events describe it; field names follow GET /correspondence/{id}. */
export interface ProjectedCorrespondence {
  correspondence_id: string;
  /** NULL until an event states it (only participant events seen so far). */
  status: string | null;
  kind: string | null;
  subject: string | null;
  content_type: string | null;
  created_at: string | null;
  document_ids: string[];
  send_summary: SendSummary | null;
  participants: Array<{
    participant_id: string;
    ref: string | null;
    state: string;
    last_act: string | null;
    last_act_at: string | null;
  }>;
  /** The latest event (by at, then event_id) applied so far. */
  last_event: { event_id: string; type: string; at: string };
  updated_at: string;
}

interface CorrespondenceRow {
  correspondence_id: string;
  status: string | null;
  kind: string | null;
  subject: string | null;
  content_type: string | null;
  created_at: Date | null;
  document_ids: string[];
  summary_delivered: number | null;
  summary_held: number | null;
  summary_undeliverable: number | null;
  summary_total: number | null;
  last_event_id: string;
  last_event_type: string;
  last_event_at: Date;
  updated_at: Date;
}

interface ParticipantRow {
  participant_id: string;
  ref: string | null;
  state: string;
  last_act: string | null;
  last_act_at: Date | null;
}

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/** One correspondence with its participants (ordered by participant_id), or undefined when no event named it. */
export async function getProjectedCorrespondence(q: Queryable, correspondenceId: string): Promise<ProjectedCorrespondence | undefined> {
  const res = await q.query<CorrespondenceRow>(
    `SELECT correspondence_id, status, kind, subject, content_type, created_at, document_ids,
            summary_delivered, summary_held, summary_undeliverable, summary_total,
            last_event_id, last_event_type, last_event_at, updated_at
     FROM correspondence_projection WHERE correspondence_id = $1`,
    [correspondenceId],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  const parts = await q.query<ParticipantRow>(
    `SELECT participant_id, ref, state, last_act, last_act_at
     FROM participant_projection WHERE correspondence_id = $1 ORDER BY participant_id`,
    [correspondenceId],
  );
  return {
    correspondence_id: row.correspondence_id,
    status: row.status,
    kind: row.kind,
    subject: row.subject,
    content_type: row.content_type,
    created_at: iso(row.created_at),
    document_ids: row.document_ids ?? [],
    send_summary:
      row.summary_total === null
        ? null
        : {
            delivered: Number(row.summary_delivered),
            held: Number(row.summary_held),
            undeliverable: Number(row.summary_undeliverable),
            total: Number(row.summary_total),
          },
    participants: parts.rows.map((p) => ({
      participant_id: p.participant_id,
      ref: p.ref,
      state: p.state,
      last_act: p.last_act,
      last_act_at: iso(p.last_act_at),
    })),
    last_event: { event_id: row.last_event_id, type: row.last_event_type, at: iso(row.last_event_at)! },
    updated_at: iso(row.updated_at)!,
  };
}

/**
 * Ids of correspondences that can still change (not sealed or withdrawn, or
 * status unknown), in id order, a page at a time: pass the last id of a page as
 * `after` for the next. Uses correspondence_projection_open_idx.
 */
export async function listOpenCorrespondenceIds(q: Queryable, options: { after?: string; limit: number }): Promise<string[]> {
  const res = await q.query<{ correspondence_id: string }>(
    `SELECT correspondence_id FROM correspondence_projection
     WHERE status_rank < 2 AND ($1::text IS NULL OR correspondence_id > $1)
     ORDER BY correspondence_id LIMIT $2`,
    [options.after ?? null, options.limit],
  );
  return res.rows.map((r) => r.correspondence_id);
}
