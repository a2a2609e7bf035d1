import type { Queryable } from '../db/types.js';
import type { Explanation } from './synthetic.js';

/** Stores what a re-read showed; an explanation already stored (same id) is left as it is. */
export async function insertExplanations(q: Queryable, list: readonly Explanation[], runId: number | null): Promise<number> {
  if (list.length === 0) return 0;
  const res = await q.query(
    `INSERT INTO reconcile_explanations (explanation_id, correspondence_id, event_type, participant_id, window_from, window_to, anchor, exact, outcome, single, synthetic_event_id, detail, run_id)
     SELECT e.*, $12::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $11::timestamptz[], $13::bool[], $7::text[], $8::bool[], $9::text[], $10::text[])
       AS e(explanation_id, correspondence_id, event_type, participant_id, window_from, window_to, anchor, exact, outcome, single, synthetic_event_id, detail)
     ON CONFLICT (explanation_id) DO NOTHING`,
    [
      list.map((e) => e.explanation_id),
      list.map((e) => e.correspondence_id),
      list.map((e) => e.event_type),
      list.map((e) => e.participant_id),
      list.map((e) => e.window_from),
      list.map((e) => e.window_to),
      list.map((e) => e.outcome),
      list.map((e) => e.single),
      list.map((e) => e.synthetic_event_id),
      list.map((e) => e.detail),
      list.map((e) => e.anchor),
      runId,
      list.map((e) => e.exact),
    ],
  );
  return res.rowCount;
}

/** An explanation as stored: the same shape the re-read produced. */
export type StoredExplanation = Explanation;

/**
 * Every explanation stored for these correspondences, with whether a single one
 * has already closed a gap. The unused ones (and every one for any number of
 * events) can still account for a gap; all of them, used or not, show which
 * files a gap could be about.
 */
export async function explanationsOf(
  q: Queryable,
  correspondenceIds: readonly string[],
): Promise<Array<StoredExplanation & { available: boolean }>> {
  if (correspondenceIds.length === 0) return [];
  const res = await q.query<StoredExplanation & { available: boolean }>(
    `SELECT explanation_id, correspondence_id, event_type, participant_id, window_from, window_to, anchor, exact, outcome, single,
            synthetic_event_id, detail, (NOT single OR used_by_gap IS NULL) AS available
     FROM reconcile_explanations
     WHERE correspondence_id = ANY($1::text[])`,
    [correspondenceIds],
  );
  return res.rows;
}

/** What a file's re-read showed, used or not: enough to tell which files a gap could be about. */
export type ExplanationWindow = Pick<Explanation, 'correspondence_id' | 'event_type' | 'window_from' | 'window_to' | 'anchor'>;

/** Which of these explanations have already closed a gap (a standing one is stored when it does). */
export async function usedExplanationIds(q: Queryable, explanationIds: readonly string[]): Promise<Set<string>> {
  if (explanationIds.length === 0) return new Set();
  const res = await q.query<{ explanation_id: string }>(
    `SELECT explanation_id FROM reconcile_explanations WHERE explanation_id = ANY($1::text[]) AND used_by_gap IS NOT NULL`,
    [explanationIds],
  );
  return new Set(res.rows.map((r) => r.explanation_id));
}

/** A stored explanation with when and by which run it was found, and the gap it closed. */
export type ExplanationRecord = StoredExplanation & { run_id: number | null; created_at: Date; used_by_gap: number | null };

/**
 * What each re-read of a correspondence found different, oldest first, or only the one that wrote a given
 * synthetic event (reconcile_explanations_correspondence_idx).
 */
export async function explanationHistory(
  q: Queryable,
  correspondenceId: string,
  options: { syntheticEventId?: string | undefined; limit: number },
): Promise<ExplanationRecord[]> {
  const res = await q.query<ExplanationRecord>(
    `SELECT explanation_id, correspondence_id, event_type, participant_id, window_from, window_to, anchor, exact, outcome, single,
            synthetic_event_id, detail, run_id::int AS run_id, created_at, used_by_gap::int AS used_by_gap
     FROM reconcile_explanations
     WHERE correspondence_id = $1 AND ($2::text IS NULL OR synthetic_event_id = $2)
     ORDER BY created_at, explanation_id LIMIT $3`,
    [correspondenceId, options.syntheticEventId ?? null, options.limit],
  );
  return res.rows;
}
