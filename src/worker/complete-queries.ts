import { arrayLiteral } from '../db/array-literal.js';
import { named } from '../db/statement.js';
import type { Queryable } from '../db/types.js';
import { INBOX_CHANNEL, type InboxStatus } from '../inbox/types.js';

/**
 * The completion finds its rows by event id. Written plainly, `status IN
 * ('received', 'failed')` implies the predicates of the partial indexes over
 * the backlog, and statistics from a quiet moment (those indexes looked empty)
 * then let the planner walk one of them whole and filter, for every event of
 * the batch. The comparison under the "C" collation means the same (equality is
 * exact in every collation) but implies no index predicate, so only the event
 * id's index can serve. The rows are also named as `event_id = ANY(…)`: joined
 * only to the unnested batch, the same statistics made the planner walk a whole
 * index. Since migration 012 that index is a hash index, which serves the list
 * as a bitmap scan (a hash index takes no list in a plain index scan).
 */
const IS_UNFINISHED = (alias: string): string => `${alias}.status COLLATE "C" IN ('received', 'failed')`;

const TAKE_BATCH_SQL = named('take_batch', 'DELETE FROM inbox_attempts WHERE batch_id = $1::bigint');

/**
 * Takes a claimed batch for its processing transaction: deletes its
 * inbox_attempts row, which stays locked until this transaction ends. So the
 * reaper passes over it however long the handlers take; a commit ends the
 * attempt with the outcomes written beside it, and a rollback (or a crash)
 * leaves the row for the reaper. False when the row is gone: the worker took
 * longer than the lease to get here and the reaper has handed the events back.
 */
export async function takeBatch(tx: Queryable, batchId: string): Promise<boolean> {
  const res = await tx.query(TAKE_BATCH_SQL, [batchId]);
  return res.rowCount === 1;
}

/**
 * The same for one event of a batch whose shared transaction failed: it leaves
 * the batch's row in this transaction, which deletes the row once empty.
 */
export async function takeOneOfBatch(tx: Queryable, batchId: string, eventId: string): Promise<boolean> {
  const res = await tx.query<{ left: number }>(
    `UPDATE inbox_attempts SET event_ids = array_remove(event_ids, $2)
     WHERE batch_id = $1::bigint AND $2 = ANY(event_ids)
     RETURNING cardinality(event_ids) AS left`,
    [batchId, eventId],
  );
  if (res.rowCount !== 1) return false;
  if (res.rows[0]!.left === 0) await tx.query('DELETE FROM inbox_attempts WHERE batch_id = $1::bigint', [batchId]);
  return true;
}

/** The new state of one claimed row. */
export interface Completion {
  eventId: string;
  /** When the event was received (the claim's row): names the partitions the completion needs. */
  receivedAt?: Date;
  status: Exclude<InboxStatus, 'processing'>;
  /** Kept as last_error; null leaves the previous error in place (history). */
  error: string | null;
  /** When to try again (failed) or null to leave next_attempt_at alone. */
  retryInMs: number | null;
  /** 0 counts the claim's attempt; -1 when the event was released without running: its attempt does not count. */
  attemptsDelta: 0 | -1;
}

/**
 * Writes a whole batch's outcomes in one statement, counting each attempt that
 * ran. Released events are left out: their row stays as it was before the
 * claim. The caller holds the batch (takeBatch), so no one else is running
 * these events. With `notify`, wakes the other workers: a finished event may
 * release later events of its correspondence they are holding back.
 */
const COMPLETE_SQL = named(
  'complete',
  `
WITH done AS (
  UPDATE inbox i
  SET status = u.status,
      attempts = i.attempts + 1,
      last_error = coalesce(u.error, i.last_error),
      next_attempt_at = CASE WHEN u.retry_in_ms IS NULL THEN i.next_attempt_at ELSE now() + make_interval(secs => u.retry_in_ms / 1000.0) END,
      processed_at = CASE WHEN u.status IN ('processed', 'skipped') THEN now() ELSE i.processed_at END
  FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[]) AS u(event_id, status, error, retry_in_ms)
  WHERE i.event_id = u.event_id AND i.event_id = ANY($1::text[]) AND ${IS_UNFINISHED('i')}
    -- The batch's earliest receipt: Postgres skips, at the start of the run, every partition of an earlier day.
    -- A second before it, as the time came back through a JavaScript Date (milliseconds, maybe rounded up).
    AND i.received_at >= coalesce($6::timestamptz - interval '1 second', '-infinity'::timestamptz)
  RETURNING i.event_id
)
SELECT count(*)::int AS updated, (CASE WHEN $5::boolean THEN pg_notify('${INBOX_CHANNEL}', '') END) IS NULL AS notified
FROM done`,
);

/**
 * The completion's plan, whatever the statistics were when the connection cached
 * it: the rows by key, never the whole inbox, and the batch joined by hash, not
 * unnested again for every row. On a small inbox (a new installation), reading
 * it whole and a nested loop over a batch estimated at one row are the
 * cheapest plans, and a connection would keep them as the inbox grew. Set here, last
 * in the batch's transaction, so that no handler's statement is planned under it.
 */
const COMPLETE_PLAN = 'SET LOCAL enable_seqscan = off; SET LOCAL enable_nestloop = off';

/** The earliest receipt time of the batch, or null when one completion does not say (then no partition is skipped). */
function earliestReceipt(completions: readonly Completion[]): Date | null {
  let earliest: Date | null = null;
  for (const c of completions) {
    if (!c.receivedAt) return null;
    if (earliest === null || c.receivedAt < earliest) earliest = c.receivedAt;
  }
  return earliest;
}

export async function completeEvents(q: Queryable, all: readonly Completion[], notify: boolean): Promise<number> {
  const completions = all.filter((c) => c.attemptsDelta === 0);
  if (completions.length === 0) return 0;
  await q.exec(COMPLETE_PLAN);
  const res = await q.query<{ updated: number }>(COMPLETE_SQL, [
    arrayLiteral(completions.map((c) => c.eventId)),
    arrayLiteral(completions.map((c) => c.status)),
    arrayLiteral(completions.map((c) => c.error)),
    arrayLiteral(completions.map((c) => c.retryInMs)),
    notify,
    earliestReceipt(completions),
  ]);
  return Number(res.rows[0]?.updated ?? 0);
}
