import type { Queryable } from '../db/types.js';
import { INBOX_CHANNEL, type NewInboxEvent } from './types.js';

/**
 * One statement inserts a whole batch: columns travel as arrays (a constant
 * parameter count whatever the batch size), conflicts on event_id are skipped,
 * and the ids actually inserted come back. pg_notify is called per inserted row
 * but Postgres folds identical notifications of one transaction into one.
 */
const INSERT_BATCH_SQL = `
WITH batch AS (
  SELECT *
  FROM unnest(
    $1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::smallint[], $12::text[], $13::text[]
  ) AS b(event_id, type, occurred_at, payload, raw_body_b64, signature_header,
         headers, endpoint_id, source, correspondence_id, secret_index, status, last_error)
),
inserted AS (
  INSERT INTO inbox (event_id, type, occurred_at, payload, raw_body, signature_header,
                     headers, endpoint_id, source, correspondence_id, secret_index, status, last_error)
  SELECT event_id, type, occurred_at, payload::jsonb, decode(raw_body_b64, 'base64'), signature_header,
         headers::jsonb, endpoint_id, source, correspondence_id, secret_index, status, last_error
  FROM batch
  ON CONFLICT (event_id) DO NOTHING
  RETURNING event_id
)
SELECT event_id, pg_notify('${INBOX_CHANNEL}', '') IS NULL AS notified FROM inserted`;

/** Inserts events (unique ids expected) and returns the set of ids that were new. */
export async function insertInboxBatch(q: Queryable, events: readonly NewInboxEvent[]): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const res = await q.query<{ event_id: string }>(INSERT_BATCH_SQL, [
    events.map((e) => e.eventId),
    events.map((e) => e.type),
    events.map((e) => e.occurredAt),
    events.map((e) => e.payloadJson),
    // base64 keeps bytes intact through both drivers' text-array encoding.
    events.map((e) => (e.rawBody ? e.rawBody.toString('base64') : null)),
    events.map((e) => e.signatureHeader),
    events.map((e) => (e.headers ? JSON.stringify(e.headers) : null)),
    events.map((e) => e.endpointId),
    events.map((e) => e.source),
    events.map((e) => e.correspondenceId),
    events.map((e) => e.secretIndex),
    events.map((e) => e.status),
    events.map((e) => e.lastError),
  ]);
  return new Set(res.rows.map((r) => r.event_id));
}
