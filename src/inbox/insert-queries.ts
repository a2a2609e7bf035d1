import type { Queryable } from '../db/types.js';
import { INBOX_CHANNEL, type NewInboxEvent } from './types.js';

/**
 * One statement inserts a whole batch: columns travel as arrays (a constant
 * parameter count whatever the batch size), conflicts on event_id are skipped,
 * and one pg_notify for the whole flush when anything was new. Only the count of
 * inserted rows comes back when it is the whole batch (nearly always); the ids
 * are aggregated and sent only when some were duplicates, which saves Postgres
 * building and us parsing an array of every id on every flush.
 *
 * The signed bytes are stored once, in raw_body: Postgres no longer parses every
 * body into jsonb on the hot path (readers parse raw_body instead, see
 * payloadOf). payload is written only for a row that has no raw bytes.
 */
const INSERT_BATCH_SQL = `
WITH inserted AS (
  INSERT INTO inbox (event_id, type, occurred_at, payload, raw_body, signature_header,
                     headers, endpoint_id, source, correspondence_id, secret_index, status, last_error)
  SELECT b.event_id, b.type, b.occurred_at, b.payload::jsonb, decode(b.raw_body_b64, 'base64'), b.signature_header,
         b.headers::jsonb, b.endpoint_id, b.source, b.correspondence_id, b.secret_index, b.status, b.last_error
  FROM unnest(
    $1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::smallint[], $12::text[], $13::text[]
  ) AS b(event_id, type, occurred_at, payload, raw_body_b64, signature_header,
         headers, endpoint_id, source, correspondence_id, secret_index, status, last_error)
  ON CONFLICT (event_id) DO NOTHING
  RETURNING event_id
),
counted AS (SELECT count(*)::int AS n FROM inserted)
SELECT counted.n,
       CASE WHEN counted.n < $14::int THEN (SELECT coalesce(array_agg(event_id), '{}') FROM inserted) END AS ids,
       (CASE WHEN counted.n > 0 THEN pg_notify('${INBOX_CHANNEL}', '') END) IS NULL AS notified
FROM counted`;

/** Inserts events (unique ids expected) and returns the set of ids that were new. */
export async function insertInboxBatch(q: Queryable, events: readonly NewInboxEvent[]): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const n = events.length;
  const cols: unknown[][] = Array.from({ length: 13 }, () => new Array<unknown>(n));
  for (let i = 0; i < n; i++) {
    const e = events[i]!;
    cols[0]![i] = e.eventId;
    cols[1]![i] = e.type;
    cols[2]![i] = e.occurredAt;
    cols[3]![i] = e.rawBody ? null : e.payloadJson;
    // base64 keeps bytes intact through both drivers' text-array encoding.
    cols[4]![i] = e.rawBody ? e.rawBody.toString('base64') : null;
    cols[5]![i] = e.signatureHeader;
    cols[6]![i] = e.headers ? JSON.stringify(e.headers) : null;
    cols[7]![i] = e.endpointId;
    cols[8]![i] = e.source;
    cols[9]![i] = e.correspondenceId;
    cols[10]![i] = e.secretIndex;
    cols[11]![i] = e.status;
    cols[12]![i] = e.lastError;
  }
  const res = await q.query<{ n: number; ids: string[] | null }>(INSERT_BATCH_SQL, [...cols, n]);
  const ids = res.rows[0]?.ids;
  return ids ? new Set(ids) : new Set(events.map((e) => e.eventId));
}
