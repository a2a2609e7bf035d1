import type { Queryable } from '../db/types.js';
import { INBOX_CHANNEL, type InboxStatus } from '../inbox/types.js';

/**
 * These statements find their rows by event id. Written plainly, `status =
 * 'processing'` implies the predicates of the partial indexes over the backlog,
 * and statistics from a quiet moment (those indexes looked empty) then let the
 * planner walk one of them whole and filter, for every event of the batch. The
 * comparison under the "C" collation means the same (equality is exact in every
 * collation) but implies no index predicate, so only the primary key can serve.
 * The completion also names its rows as `event_id = ANY(…)`: joined only to the
 * unnested batch, the same statistics (no row leased to anyone) made the planner
 * walk the whole primary key for a lease it thought no row held.
 */
const IS_PROCESSING = (alias: string): string => `${alias}.status COLLATE "C" = 'processing'`;

/**
 * Re-asserts ownership of a claimed batch at the start of its processing
 * transaction. The row locks taken here are held until commit, and the reaper
 * skips locked rows, so no other worker can be handed these events while this
 * one is still running them, however long the handlers take. Returns the ids
 * still ours (a lease that ran out before we got here may have been reclaimed).
 */
export async function lockClaimed(tx: Queryable, eventIds: readonly string[], workerId: string): Promise<Set<string>> {
  const res = await tx.query<{ event_id: string }>(
    `SELECT event_id FROM inbox
     WHERE event_id = ANY($1::text[]) AND locked_by = $2 AND ${IS_PROCESSING('inbox')}
     FOR NO KEY UPDATE`,
    [eventIds, workerId],
  );
  return new Set(res.rows.map((r) => r.event_id));
}

/** The new state of one claimed row. */
export interface Completion {
  eventId: string;
  status: Exclude<InboxStatus, 'processing'>;
  /** Kept as last_error; null leaves the previous error in place (history). */
  error: string | null;
  /** When to try again (failed) or null to leave next_attempt_at alone. */
  retryInMs: number | null;
  /** -1 when the event was released without running: its attempt does not count. */
  attemptsDelta: 0 | -1;
}

/**
 * Writes a whole batch's outcomes in one statement and clears the lease. Only
 * rows still leased to this worker are touched. With `notify`, wakes the other
 * workers: a finished event may release later events of its correspondence
 * they are holding back.
 */
const COMPLETE_SQL = `
WITH done AS (
  UPDATE inbox i
  SET status = u.status,
      attempts = i.attempts + u.attempts_delta,
      last_error = coalesce(u.error, i.last_error),
      next_attempt_at = CASE WHEN u.retry_in_ms IS NULL THEN i.next_attempt_at ELSE now() + make_interval(secs => u.retry_in_ms / 1000.0) END,
      processed_at = CASE WHEN u.status IN ('processed', 'skipped') THEN now() ELSE i.processed_at END,
      locked_by = NULL,
      locked_until = NULL
  FROM unnest($2::text[], $3::text[], $4::text[], $5::float8[], $6::int4[]) AS u(event_id, status, error, retry_in_ms, attempts_delta)
  WHERE i.event_id = u.event_id AND i.event_id = ANY($2::text[]) AND i.locked_by = $1 AND ${IS_PROCESSING('i')}
  RETURNING i.event_id
)
SELECT count(*)::int AS updated, (CASE WHEN $7::boolean THEN pg_notify('${INBOX_CHANNEL}', '') END) IS NULL AS notified
FROM done`;

export async function completeEvents(q: Queryable, workerId: string, completions: readonly Completion[], notify: boolean): Promise<number> {
  if (completions.length === 0) return 0;
  const res = await q.query<{ updated: number }>(COMPLETE_SQL, [
    workerId,
    completions.map((c) => c.eventId),
    completions.map((c) => c.status),
    completions.map((c) => c.error),
    completions.map((c) => c.retryInMs),
    completions.map((c) => c.attemptsDelta),
    notify,
  ]);
  return Number(res.rows[0]?.updated ?? 0);
}
