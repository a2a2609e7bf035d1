import type { Db, Queryable } from '../db/types.js';
import { payloadOf } from '../inbox/payload.js';
import type { InboxSource } from '../inbox/types.js';

/** A row the worker has claimed (status `processing`, leased to it). */
export interface ClaimedEvent {
  event_id: string;
  type: string;
  payload: unknown;
  /** Including this attempt. */
  attempts: number;
  correspondence_id: string | null;
  source: InboxSource;
  received_at: Date;
}

/**
 * Claims up to `limit` runnable events in one statement and one short
 * transaction.
 *
 * Ordering: an event waits while an earlier event (by occurred_at, then event
 * id) of its correspondence is unfinished. Once it has waited
 * POSTROOM_ORDERING_HOLD_SECONDS since it was received, it stops waiting for
 * earlier events that are failing (so one poison event cannot block a
 * correspondence forever) but still lets earlier events that are received or
 * being processed go first. `dead`, `quarantined` and finished events never hold
 * anything back. A hold of 0 turns ordering off.
 *
 * Candidates are scanned in occurrence order (inbox_claim_order_idx), so the
 * earliest events of every correspondence come first, skipping those held back
 * by an event that is being processed elsewhere or waiting out a backoff. They
 * are locked with SKIP LOCKED and checked once more: nothing that holds them back
 * may exist outside this claim (another worker may have locked it meanwhile).
 * Earlier events inside the claim are fine: the batch runs them first, in order.
 *
 * Claiming counts an attempt, so an event that crashes its worker still runs
 * out of attempts instead of looping forever.
 */
const HELD_BACK_BY = (e: string, c: string): string => `
  ${e}.correspondence_id = ${c}.correspondence_id
  AND ${e}.status IN ('received', 'processing', 'failed') -- lets the planner use inbox_ordering_idx
  AND ${e}.occurred_at <= ${c}.occurred_at
  AND (${e}.occurred_at < ${c}.occurred_at OR ${e}.event_id COLLATE "C" < ${c}.event_id COLLATE "C")
  AND (${e}.status IN ('received', 'processing')
       OR (${e}.status = 'failed' AND ${c}.received_at > now() - make_interval(secs => $4)))`;

/**
 * Read the correspondence's unfinished events in inbox_ordering_idx's order.
 * Without it, statistics from a quiet moment (the partial indexes looked empty)
 * let the planner walk inbox_unfinished_idx, whose predicate is the same, for
 * every candidate: the whole backlog per event, so the drain slowed as the
 * backlog grew. Asking for this order, with sorts off in the claim's
 * transaction, leaves the ordering index as the only plan. OFFSET 0 keeps the
 * ORDER BY: the planner drops both from an EXISTS subquery without it.
 */
const EARLIEST_FIRST = (e: string): string => `ORDER BY ${e}.correspondence_id, ${e}.occurred_at LIMIT 1 OFFSET 0`;

const CLAIM_SQL = `
WITH candidates AS (
  SELECT c.event_id, c.correspondence_id, c.occurred_at, c.received_at
  FROM inbox c
  WHERE c.status IN ('received', 'failed')
    AND c.next_attempt_at <= now()
    AND ($4 <= 0 OR c.correspondence_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM inbox e
          WHERE ${HELD_BACK_BY('e', 'c')}
            AND (e.status = 'processing' OR e.next_attempt_at > now())
          ${EARLIEST_FIRST('e')}))
  ORDER BY c.occurred_at, c.event_id COLLATE "C"
  LIMIT $2
  FOR UPDATE SKIP LOCKED
),
claimable AS (
  SELECT c.event_id FROM candidates c
  WHERE $4 <= 0 OR c.correspondence_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM inbox e
    WHERE ${HELD_BACK_BY('e', 'c')}
      AND NOT EXISTS (SELECT 1 FROM candidates k WHERE k.event_id = e.event_id)
    ${EARLIEST_FIRST('e')})
),
claimed AS (
  UPDATE inbox i
  SET status = 'processing',
      attempts = i.attempts + 1,
      locked_by = $1,
      locked_until = now() + make_interval(secs => $3)
  FROM claimable k
  WHERE i.event_id = k.event_id
  RETURNING i.event_id, i.type, i.payload, CASE WHEN i.payload IS NULL THEN i.raw_body END AS raw_body,
            i.attempts, i.correspondence_id, i.source, i.received_at, i.occurred_at
)
SELECT event_id, type, payload, raw_body, attempts, correspondence_id, source, received_at
FROM claimed
ORDER BY occurred_at NULLS FIRST, event_id COLLATE "C"`;

export interface ClaimParams {
  workerId: string;
  limit: number;
  leaseSeconds: number;
  orderingHoldSeconds: number;
}

/**
 * The claim must walk inbox_claim_order_idx in order and stop at the limit.
 * Without statistics (a new database) or with statistics from a quiet moment,
 * the planner may instead think few rows are runnable and choose a bitmap scan
 * plus sort, which evaluates the ordering check for every runnable row: fine for
 * ten, ruinous for a backlog of fifty thousand, exactly when speed matters.
 * These settings, local to the claim's transaction, keep the plan that scales.
 */
const CLAIM_PLAN = 'SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL jit = off';

/** Returns the claimed events in the order they must run: by occurrence, then event id. */
export async function claimBatch(db: Pick<Db, 'transaction'>, p: ClaimParams): Promise<ClaimedEvent[]> {
  return db.transaction(async (tx) => {
    await tx.exec(CLAIM_PLAN);
    const res = await tx.query<ClaimedEvent & { raw_body: Uint8Array | null }>(CLAIM_SQL, [
      p.workerId,
      p.limit,
      p.leaseSeconds,
      p.orderingHoldSeconds,
    ]);
    // The body is parsed here, in the worker, not by Postgres on the ingest path.
    return res.rows.map(({ raw_body, ...row }) => ({ ...row, payload: payloadOf({ payload: row.payload, raw_body }) }));
  });
}

/**
 * Hands back events whose worker stopped renewing its lease (crashed, killed,
 * partitioned). A worker that is alive holds row locks on its batch while it
 * runs it, so SKIP LOCKED passes over those. The claim already counted the
 * attempt: an event that keeps killing its worker goes dead.
 */
const REAP_SQL = `
WITH expired AS (
  SELECT event_id FROM inbox
  WHERE status = 'processing' AND locked_until < now()
  ORDER BY locked_until
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
UPDATE inbox i
SET status = CASE WHEN i.attempts >= $1 THEN 'dead' ELSE 'failed' END,
    next_attempt_at = now(),
    last_error = left('lease expired: worker ' || coalesce(i.locked_by, '?') || ' stopped before finishing attempt ' || i.attempts, 1000),
    locked_by = NULL,
    locked_until = NULL
FROM expired x
WHERE i.event_id = x.event_id
RETURNING i.event_id, i.type, i.status`;

export async function reapExpiredLeases(
  q: Queryable,
  maxAttempts: number,
  limit = 1000,
): Promise<Array<{ event_id: string; type: string; status: 'failed' | 'dead' }>> {
  const res = await q.query<{ event_id: string; type: string; status: 'failed' | 'dead' }>(REAP_SQL, [maxAttempts, limit]);
  return res.rows;
}
