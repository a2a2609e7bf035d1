import type { Queryable } from '../db/types.js';
import { queryById } from './by-id.js';
import { inboxFilterSql, type InboxFilter } from './filter.js';
import { shownStatus } from './in-flight.js';
import { payloadOf } from './payload.js';
import type { InboxDetail, InboxRecord } from './types.js';

const RECORD_COLUMNS = `event_id, type, ${shownStatus()} AS status, source, occurred_at, received_at, correspondence_id, endpoint_id,
  attempts, next_attempt_at, last_error, processed_at`;

export interface ListFilter extends InboxFilter {
  limit: number;
}

/** Newest first; uses inbox_attention_idx (failed, dead, quarantined) or inbox_received_idx. */
export async function listInbox(q: Queryable, filter: ListFilter): Promise<InboxRecord[]> {
  const params: unknown[] = [];
  const where = inboxFilterSql(filter, params);
  params.push(filter.limit);
  const res = await q.query<InboxRecord>(
    `SELECT ${RECORD_COLUMNS} FROM inbox ${where ? `WHERE ${where}` : ''}
     ORDER BY received_at DESC, event_id LIMIT $${params.length}`,
    params,
  );
  return res.rows;
}

/**
 * A row's kept delivery headers, however they were stored: the usual ones as two columns (a header
 * that was not sent is NULL there, and left out) beside the row's own event_id and type, any other
 * set as JSON (insert-queries.ts). Header values are never null, so stripping nulls drops only those.
 */
const HEADERS = `CASE WHEN headers IS NULL AND (delivery_content_type IS NOT NULL OR delivery_user_agent IS NOT NULL)
  THEN jsonb_strip_nulls(jsonb_build_object('content-type', delivery_content_type, 'user-agent', delivery_user_agent,
                                            'x-service-event-id', event_id, 'x-service-event-type', type))
  ELSE headers END AS headers`;

export async function getInboxEvent(q: Queryable, eventId: string): Promise<InboxDetail | undefined> {
  const res = await queryById<InboxDetail & { raw_body: Uint8Array | null }>(
    q,
    `SELECT ${RECORD_COLUMNS}, payload, ${HEADERS}, secret_index, locked_by, locked_until, pruned_at,
            octet_length(raw_body) AS raw_body_bytes, CASE WHEN payload IS NULL THEN raw_body END AS raw_body,
            split_part(trace_context, '-', 2) AS trace_id
     FROM inbox WHERE %BY_ID%`,
    [eventId],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  const { raw_body, ...detail } = row;
  return { ...detail, payload: payloadOf({ payload: detail.payload, raw_body, status: detail.status }) };
}

export async function getRawBody(q: Queryable, eventId: string): Promise<Buffer | undefined> {
  const res = await queryById<{ raw_body: Uint8Array | null }>(q, 'SELECT raw_body FROM inbox WHERE %BY_ID%', [eventId]);
  const raw = res.rows[0]?.raw_body;
  return raw ? Buffer.from(raw) : undefined;
}

/** Moved to count-queries.ts (migration 007); re-exported for the store gauges. */
export { inboxStatusCounts } from './count-queries.js';
