import { PostroomError } from '../errors.js';
import { named } from '../db/statement.js';
import type { Db, NamedStatement, Queryable } from '../db/types.js';
import { inFlight } from '../inbox/in-flight.js';
import { payloadOf } from '../inbox/payload.js';
import type { InboxSource } from '../inbox/types.js';

/** An event the worker has claimed: counted in its batch's inbox_attempts row, not yet run. */
export interface ClaimedEvent {
  event_id: string;
  type: string;
  payload: unknown;
  /** Including this attempt. */
  attempts: number;
  correspondence_id: string | null;
  source: InboxSource;
  received_at: Date;
  /** The envelope's `at`; null for a quarantined row. */
  occurred_at: Date | null;
  /** The delivery's X-Service-Signature (its `t=` is the lag's other origin); null for a synthetic event. */
  signature_header: string | null;
  /** The W3C traceparent of the request that delivered it (migrations/028), when tracing was on. */
  trace_context: string | null;
}

/** A claim: its inbox_attempts row and its events in the order they must run. */
export interface ClaimedBatch {
  batchId: string;
  events: ClaimedEvent[];
}

/**
 * Ordering: an event waits while an earlier event (by occurred_at, then event
 * id) of its correspondence is unfinished. Once it has waited
 * POSTROOM_ORDERING_HOLD_SECONDS since it was received, it stops waiting for
 * earlier events that are failing (so one poison event cannot block a
 * correspondence forever) but still lets earlier events that are received or
 * being processed go first. `dead`, `quarantined` and finished events never hold
 * anything back. A hold of 0 turns ordering off. ('processing' is only found on
 * rows claimed by a version before migration 008.)
 */
/**
 * The inbox is partitioned by day of receipt (migration 024), and no event the claim may take, nor any that
 * may hold one back, was received before the oldest unfinished event. The claim names that event's day as a
 * constant (`since`), so Postgres plans it over the days that hold work only, not over every day retention
 * keeps: planned over 90 days, the claim cost 45-70 ms; over the days of the backlog, what it cost on one
 * table. The text, and so the prepared statement, changes when the backlog's oldest day does.
 */
const HELD_BACK_BY = (e: string, c: string, hold: string, since: string): string => `
  ${e}.correspondence_id = ${c}.correspondence_id
  AND ${e}.status IN ('received', 'processing', 'failed') -- lets the planner use inbox_ordering_idx
  AND ${e}.received_at >= '${since} 00:00:00+00'::timestamptz
  AND ${e}.occurred_at <= ${c}.occurred_at
  AND (${e}.occurred_at < ${c}.occurred_at OR ${e}.event_id COLLATE "C" < ${c}.event_id COLLATE "C")
  AND (${e}.status IN ('received', 'processing')
       OR (${e}.status = 'failed' AND ${c}.received_at > now() - make_interval(secs => ${hold})))`;

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

/**
 * The claim: up to `limit` runnable events, scanned in occurrence order
 * (inbox_claim_order_idx) so the earliest events of every correspondence come
 * first, skipping those in another batch and those held back by an earlier
 * event of their correspondence that is in another batch or waiting out a
 * backoff. Then the candidates that an earlier unfinished event outside them
 * still holds back are dropped: the hold is not transitive, since an event
 * whose own hold ran out passes a failing event that a more recent one, between
 * them, still waits for (test/worker/claim-attempts.test.ts). What remains is
 * recorded as one inbox_attempts row, which keeps the events out of every other
 * claim once this transaction commits, and returned from the rows the scan has
 * already read, in the order they must run.
 *
 * One statement and no row locks: claims take turns under CLAIM_LOCK, so the
 * statement's snapshot, taken once the lock is held, sees every batch recorded
 * before it. `claimable` is materialised, so the batch records and the query
 * returns the very same rows; the batch also returns its size, which claimBatch
 * checks before the claim commits.
 *
 * The limit and the hold are written into the text (one statement per worker
 * configuration), not passed as parameters: with an unknown LIMIT (read as a
 * tenth of the table) the generic plan looks dearer than a custom one, so
 * Postgres would plan the claim afresh on every call, as long as running it.
 * Without parameters the connection plans it once, and that plan cannot go stale
 * as the inbox grows: with sorts and bitmap scans off (CLAIM_PLAN) the
 * claim-order and ordering indexes are its only paths, and an ANALYZE of the
 * inbox still makes Postgres plan it again.
 */
function claimSql(limit: number, holdSeconds: number, since: string): NamedStatement {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(since)) throw new RangeError(`claim horizon must be a day (YYYY-MM-DD), got ${since}`);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`claim limit must be a positive integer, got ${limit}`);
  if (!Number.isFinite(holdSeconds)) throw new RangeError(`ordering hold must be a number of seconds, got ${holdSeconds}`);
  const hold = String(holdSeconds);
  return named(
    `claim_${since.replaceAll('-', '')}`,
    `
WITH candidates AS MATERIALIZED (
  SELECT c.event_id, c.correspondence_id, c.occurred_at, c.received_at, c.type, c.payload,
         CASE WHEN c.payload IS NULL THEN c.raw_body END AS raw_body, c.attempts, c.source,
         c.signature_header, c.trace_context
  FROM inbox c
  WHERE c.status IN ('received', 'failed')
    AND c.received_at >= '${since} 00:00:00+00'::timestamptz
    AND c.next_attempt_at <= now()
    AND NOT ${inFlight('c')}
    ${
      holdSeconds <= 0
        ? ''
        : `AND (c.correspondence_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM inbox e
      WHERE ${HELD_BACK_BY('e', 'c', hold, since)}
        AND (e.status = 'processing' OR e.next_attempt_at > now() OR ${inFlight('e')})
      ${EARLIEST_FIRST('e')}))`
    }
  ORDER BY c.occurred_at, c.event_id COLLATE "C"
  LIMIT ${limit}
),
claimable AS MATERIALIZED (
  SELECT c.* FROM candidates c
  ${
    holdSeconds <= 0
      ? ''
      : `WHERE c.correspondence_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM inbox e
    WHERE ${HELD_BACK_BY('e', 'c', hold, since)}
      AND NOT EXISTS (SELECT 1 FROM candidates k WHERE k.event_id = e.event_id)
    ${EARLIEST_FIRST('e')})`
  }
),
batch AS (
  INSERT INTO inbox_attempts (worker_id, event_ids, claimed_under_lock)
  SELECT $1, array_agg(event_id), true FROM claimable HAVING count(*) > 0
  RETURNING batch_id, cardinality(event_ids) AS size
)
SELECT b.batch_id::text AS batch_id, b.size, c.event_id, c.type, c.payload, c.raw_body,
       c.attempts + 1 AS attempts, c.correspondence_id, c.source, c.received_at,
       c.occurred_at, c.signature_header, c.trace_context
FROM batch b CROSS JOIN claimable c
ORDER BY c.occurred_at NULLS FIRST, c.event_id COLLATE "C"`,
  );
}

const claimStatements = new Map<string, NamedStatement>();
function claimStatement(limit: number, holdSeconds: number, since: string): NamedStatement {
  const key = `${limit}/${holdSeconds}/${since}`;
  let statement = claimStatements.get(key);
  if (!statement) {
    // One statement per day of backlog: the ones of days gone are not kept.
    for (const old of claimStatements.keys()) if (!old.endsWith(`/${since}`)) claimStatements.delete(old);
    claimStatements.set(key, (statement = claimSql(limit, holdSeconds, since)));
  }
  return statement;
}

/**
 * The UTC day of the oldest unfinished event, or undefined when there is none: the first entry of
 * inbox_unfinished_idx in receipt order. Prepared, so its plan over every partition is made once per
 * connection.
 */
const BACKLOG_SINCE_SQL = named(
  'backlog_since',
  `SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM inbox
   WHERE status IN ('received', 'processing', 'failed') ORDER BY received_at LIMIT 1`,
);

export interface ClaimParams {
  workerId: string;
  limit: number;
  orderingHoldSeconds: number;
}

/**
 * The claim must walk inbox_claim_order_idx in order and stop at the limit.
 * Without statistics (a new database) or with statistics from a quiet moment,
 * the planner may instead think few rows are runnable and choose a bitmap scan
 * plus sort, which evaluates the ordering check for every runnable row: fine for
 * ten, ruinous for a backlog of fifty thousand, exactly when speed matters.
 * These settings, local to the claim's transaction, keep the plan that scales.
 * Sequential scans are off for the same reason the other way round: a
 * connection keeps the generic plan it made after five claims, and on a new
 * installation those claims run on an inbox of a few rows, where reading it
 * whole is cheapest; that plan would stay as the inbox grew, until the next
 * ANALYZE (test/worker/plans.test.ts, "planned on a small inbox").
 */
const CLAIM_PLAN = 'SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL jit = off';

/**
 * The claim's commit does not wait for its write-ahead log to reach the disk.
 * What the claim row is for survives without that wait: a worker that dies
 * leaves Postgres holding the committed row, which every other session sees at
 * once and the WAL writer flushes within a fraction of a second; and the
 * batch's own commit, which does wait, flushes the log up to itself and so the
 * claim's commit before it. Only a crash of Postgres itself in that fraction of
 * a second can lose a claim, and then the events return to the queue with the
 * attempt uncounted and nothing of the batch committed.
 */
const CLAIM_DURABILITY = 'SET LOCAL synchronous_commit = off';

/**
 * Claims on one inbox take turns: every worker of every replica waits here,
 * until the claim before it commits. The key is the inbox table's own, so each
 * installation (schema) has its own turn, in the two-key space that postroom's
 * named locks (one bigint) never use. A claim holds it for one statement and
 * its commit, which does not wait for the disk: 3–5 ms for a few hundred
 * events, while their batch runs for tens of milliseconds without it.
 */
const CLAIM_LOCK = `SELECT pg_advisory_xact_lock('inbox'::regclass::oid::int, 0)`;

/**
 * A claim whose worker vanishes without closing its connection (a network
 * partition, a frozen machine) would hold the turn, and so stop every claim,
 * until Postgres noticed the dead peer: hours, at the kernel's keepalive
 * defaults. A claim is never idle inside its transaction longer than it takes to
 * read its rows and commit, so Postgres ends such a session after a few seconds
 * and the turn passes on; the claim is rolled back, its events go back to the
 * queue, their attempt uncounted. Killed outright, a worker's socket closes and
 * Postgres ends the session at once.
 */
const CLAIM_IDLE_LIMIT = `SET LOCAL idle_in_transaction_session_timeout = '5s'`;

/**
 * Claims up to `limit` runnable events in one short transaction that writes one
 * small row and no inbox row, in turn with every other claim on this inbox. Committed before any handler runs, that row counts
 * the attempt of an event that then kills its worker. Returns undefined when
 * nothing was runnable.
 */
export async function claimBatch(db: Pick<Db, 'transaction'>, p: ClaimParams): Promise<ClaimedBatch | undefined> {
  return db.transaction(async (tx) => {
    // The lock in a statement of its own, before the claim's: the claim's snapshot must follow it.
    await tx.exec(`${CLAIM_PLAN}; ${CLAIM_DURABILITY}; ${CLAIM_IDLE_LIMIT}; ${CLAIM_LOCK}`);
    // After the lock, so the backlog it sees is the claim's own.
    const since = (await tx.query<{ day: string }>(BACKLOG_SINCE_SQL)).rows[0]?.day;
    if (since === undefined) return undefined;
    const res = await tx.query<ClaimedEvent & { batch_id: string; size: number; raw_body: Uint8Array | null }>(
      claimStatement(p.limit, p.orderingHoldSeconds, since),
      [p.workerId],
    );
    if (res.rows.length === 0) return undefined;
    if (res.rows.length !== Number(res.rows[0]!.size)) {
      // Thrown inside the claim's transaction, so the batch row is rolled back with it: no event is left
      // recorded in a batch that nobody runs (it would lose an attempt when the lease expired).
      throw new PostroomError(
        'claim_inconsistent',
        `A claim recorded ${res.rows[0]!.size} events but returned ${res.rows.length}; it was rolled back.`,
      );
    }
    // The body is parsed here, in the worker, not by Postgres on the ingest path.
    const events = res.rows.map(({ raw_body, batch_id: _, size: __, ...row }) => ({
      ...row,
      payload: payloadOf({ payload: row.payload, raw_body }),
    }));
    return { batchId: res.rows[0]!.batch_id, events };
  });
}

/**
 * Counts the attempt of every unfinished event in a batch whose worker stopped
 * between claiming it and committing it (crashed, killed, cut off): its
 * inbox_attempts row is unlocked, because the transaction that held it is gone,
 * and older than the lease. A worker that is alive holds its batch's row locked
 * until it commits, so SKIP LOCKED passes over it however long it runs. An event
 * that keeps killing its worker runs out of attempts and goes dead.
 */
const REAP_ATTEMPTS_SQL = `
WITH orphaned AS (
  SELECT batch_id, worker_id, event_ids FROM inbox_attempts
  WHERE started_at < now() - make_interval(secs => $2)
  ORDER BY started_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED
),
gone AS (
  DELETE FROM inbox_attempts a USING orphaned o WHERE a.batch_id = o.batch_id
),
charged AS (
  UPDATE inbox i
  SET attempts = i.attempts + 1,
      status = CASE WHEN i.attempts + 1 >= $1 THEN 'dead' ELSE 'failed' END,
      next_attempt_at = now(),
      last_error = left('lease expired: worker ' || o.worker_id || ' stopped before finishing attempt ' || (i.attempts + 1), 1000)
  FROM orphaned o CROSS JOIN LATERAL unnest(o.event_ids) AS x(event_id)
  WHERE i.event_id = x.event_id
    AND i.event_id = ANY(ARRAY(SELECT unnest(event_ids) FROM orphaned))
    -- The batch's earliest receipt, from the ledger: Postgres skips, at the start of the run, every partition of
    -- an earlier day, instead of probing each day's id index for every event (90 of them at the default retention).
    AND i.received_at >= (SELECT min(l.received_at) FROM inbox_ids l WHERE l.event_id = ANY(ARRAY(SELECT unnest(event_ids) FROM orphaned)))
    AND i.status COLLATE "C" IN ('received', 'failed')
  RETURNING i.event_id, i.type, i.status
)
SELECT event_id, type, status FROM charged`;

/** The status test and the id list keep the update on the event id's index (see complete-queries.ts). */
export async function reapOrphanedAttempts(
  q: Queryable,
  maxAttempts: number,
  leaseSeconds: number,
  limit = 100,
): Promise<Array<{ event_id: string; type: string; status: 'failed' | 'dead' }>> {
  const res = await q.query<{ event_id: string; type: string; status: 'failed' | 'dead' }>(REAP_ATTEMPTS_SQL, [
    maxAttempts,
    leaseSeconds,
    limit,
  ]);
  return res.rows;
}

/**
 * Rows claimed by a version before migration 008 (status 'processing', leased
 * to a worker) whose worker stopped: handed back once the lease expires, as
 * that version did. A worker of that version that is alive holds row locks on
 * its batch while it runs it, so SKIP LOCKED passes over those. Its claim
 * already counted the attempt.
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
