import type { Queryable } from '../db/types.js';
import { INSTANT_TEXT, queryById } from './by-id.js';
import { inboxFilterSql } from './filter.js';
import { inFlight, shownStatus } from './in-flight.js';
import { payloadOf } from './payload.js';
import type { InboxStatus } from './types.js';

export { inboxStats } from './count-queries.js';

/** What replay needs to decide about a row. */
export interface ReplayCandidate {
  event_id: string;
  type: string;
  status: InboxStatus;
  attempts: number;
  payload: unknown;
  raw_body: Uint8Array | null;
  pruned_at: Date | null;
  last_error: string | null;
}

const CANDIDATE_COLUMNS = 'event_id, type, status, attempts, payload, raw_body, pruned_at, last_error';

/** Since migration 007 a row's body is stored once, in raw_body (a quarantined row keeps no payload: replay re-parses it). */
function withPayload(row: ReplayCandidate): ReplayCandidate {
  return { ...row, payload: payloadOf(row) };
}

export async function getReplayCandidate(q: Queryable, eventId: string): Promise<ReplayCandidate | undefined> {
  const res = await queryById<ReplayCandidate>(
    q,
    `SELECT event_id, type, ${shownStatus('i')} AS status,
            attempts, payload, raw_body, pruned_at, last_error
     FROM inbox i WHERE %BY_ID%`,
    [eventId],
  );
  return res.rows[0] && withPayload(res.rows[0]);
}

export interface ReplayFilter {
  status: 'dead' | 'quarantined';
  type?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  correspondenceId?: string | undefined;
  endpointId?: string | undefined;
}

export async function countReplayable(q: Queryable, f: ReplayFilter): Promise<number> {
  const params: unknown[] = [];
  const res = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbox WHERE ${inboxFilterSql(f, params)}`, params);
  return Number(res.rows[0]?.n ?? 0);
}

/**
 * Where a walk of the inbox in receipt order stopped: the last row's received_at, as text to the
 * microsecond (a JS Date would cut it to milliseconds), and its id, which orders the rows of one
 * flush (they share received_at).
 */
export interface InboxCursor {
  receivedAt: string;
  eventId: string;
}

/** The page condition and order of a walk in receipt order; `p` is the cursor's first parameter. */
const AFTER_CURSOR = (p: number): string => `($${p}::text IS NULL OR (received_at, event_id) > ($${p}::timestamptz, $${p + 1}::text))`;
const IN_RECEIPT_ORDER = 'ORDER BY received_at, event_id';

/** A page of matching rows after `after`, in receipt order (inbox_attention_idx: dead and quarantined rows only). */
export async function pageReplayable(
  q: Queryable,
  f: ReplayFilter,
  after: InboxCursor | null,
  limit: number,
): Promise<Array<ReplayCandidate & { cursor: InboxCursor }>> {
  const params: unknown[] = [];
  const where = inboxFilterSql(f, params);
  params.push(after?.receivedAt ?? null, after?.eventId ?? null, limit);
  const res = await q.query<ReplayCandidate & { received_at_text: string }>(
    `SELECT ${CANDIDATE_COLUMNS}, ${INSTANT_TEXT} AS received_at_text FROM inbox
     WHERE ${where} AND ${AFTER_CURSOR(params.length - 2)}
     ${IN_RECEIPT_ORDER} LIMIT $${params.length}`,
    params,
  );
  return res.rows.map(({ received_at_text, ...row }) => ({
    ...withPayload(row),
    cursor: { receivedAt: received_at_text, eventId: row.event_id },
  }));
}

/** A quarantined row whose body parses now: its envelope fields, filled in as ingress would have. */
export interface Reparsed {
  eventId: string;
  type: string;
  occurredAt: string;
  correspondenceId: string | null;
  json: string;
}

/**
 * Puts events back in the queue as if just received: attempts start again, and
 * the previous outcome is kept in last_error as history. Only rows still in the
 * status the caller saw, and not in a worker's hands, are touched (a worker may
 * have moved or claimed them meanwhile). The rows are read only in the days
 * between the earliest and the latest of their instants in the ledger: bounds
 * computed once, before the scan, so Postgres prunes the other days whatever
 * join it plans. By id alone, a replay of 200 events read every day retention
 * keeps (703 ms at 2M events; 67 ms when pruned to their day). A join on the
 * ledger's instant pruned only in a nested loop, which the planner dropped once
 * the ledger had statistics.
 */
export async function resetForReplay(
  q: Queryable,
  rows: ReadonlyArray<{ eventId: string; fromStatus: InboxStatus; reparsed?: Reparsed | undefined }>,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const res = await q.query<{ event_id: string }>(
    `UPDATE inbox i
     SET status = 'received',
         attempts = 0,
         next_attempt_at = now(),
         locked_by = NULL,
         locked_until = NULL,
         processed_at = NULL,
         payload = coalesce(u.payload::jsonb, i.payload),
         type = coalesce(u.type, i.type),
         occurred_at = coalesce(u.occurred_at, i.occurred_at),
         correspondence_id = CASE WHEN u.payload IS NULL THEN i.correspondence_id ELSE u.correspondence_id END,
         last_error = left(format('replayed at %s from %s after %s attempt(s)%s', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                  i.status, i.attempts, coalesce('; last error: ' || i.last_error, '')), 1000)
     FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[])
       AS u(event_id, from_status, payload, occurred_at, correspondence_id, type)
     WHERE i.event_id = u.event_id AND i.status = u.from_status AND NOT ${inFlight('i')}
       AND i.received_at BETWEEN (SELECT min(l.received_at) FROM inbox_ids l WHERE l.event_id = ANY($1::text[]))
                             AND (SELECT max(l.received_at) FROM inbox_ids l WHERE l.event_id = ANY($1::text[]))
     RETURNING i.event_id`,
    [
      rows.map((r) => r.eventId),
      rows.map((r) => r.fromStatus),
      rows.map((r) => r.reparsed?.json ?? null),
      rows.map((r) => r.reparsed?.occurredAt ?? null),
      rows.map((r) => r.reparsed?.correspondenceId ?? null),
      rows.map((r) => r.reparsed?.type ?? null),
    ],
  );
  return res.rows.map((r) => r.event_id);
}

/** A quarantined event that is still invalid: record why, today. */
export async function noteStillQuarantined(q: Queryable, eventId: string, reason: string): Promise<void> {
  await q.query(
    `UPDATE inbox SET last_error = left($2, 1000)
     WHERE event_id = $1 AND received_at = (SELECT l.received_at FROM inbox_ids l WHERE l.event_id = $1) AND status = 'quarantined'`,
    [eventId, `still invalid on replay: ${reason}`],
  );
}
