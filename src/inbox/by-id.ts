import type { QueryResult, Queryable } from '../db/types.js';

/**
 * A read of one event by id. The inbox is partitioned by receipt time, and its id index is per
 * partition, so `WHERE event_id = $1` alone probes every partition. The ledger (inbox_ids) holds the
 * instant each id was received; with it in the condition, Postgres prunes the read to the one partition
 * that can hold the row (at execution: the instant comes from a subquery).
 *
 * `sql` names the condition as `%BY_ID%`, with the id as $1. The ledger and the row agree on the instant
 * for every row this version writes; when no row matches through the ledger (an id never received, or a
 * row whose received_at an operator changed by hand), the plain condition answers.
 */
export async function queryById<R>(q: Queryable, sql: string, params: readonly unknown[]): Promise<QueryResult<R>> {
  const routed = await q.query<R>(
    sql.replace('%BY_ID%', 'event_id = $1 AND received_at = (SELECT l.received_at FROM inbox_ids l WHERE l.event_id = $1)'),
    params,
  );
  if (routed.rows.length > 0) return routed;
  return q.query<R>(sql.replace('%BY_ID%', 'event_id = $1'), params);
}

/** When the ledger says an id was received; undefined for an id never stored. */
export async function receivedAtOf(q: Queryable, eventId: string): Promise<Date | undefined> {
  const res = await q.query<{ received_at: Date }>('SELECT received_at FROM inbox_ids WHERE event_id = $1', [eventId]);
  return res.rows[0]?.received_at;
}
