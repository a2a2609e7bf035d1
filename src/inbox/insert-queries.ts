import { preparedName } from '../db/prepared.js';
import type { Queryable } from '../db/types.js';
import { INBOX_CHANNEL, type NewInboxEvent } from './types.js';

/**
 * One statement inserts a whole batch, conflicts on event_id skipped, one
 * pg_notify for the whole flush when anything was new. Only the count of
 * inserted rows comes back when it is the whole batch (nearly always); the ids
 * are aggregated and sent only when some were duplicates.
 *
 * The rows travel as two parameters, whatever the batch size: every field but
 * the body in one JSON array (jsonb_to_recordset), and the signed bytes of all
 * bodies concatenated in one bytea, which the driver sends in binary; each row
 * names its slice (off, len; len -1 for no bytes). Thirteen text arrays (the
 * bodies base64) cost Postgres about three times as much to parse and plan per
 * flush, and the driver's array escaping was the largest part of our flush.
 * It is a named prepared statement on postroom's own Postgres pool (see
 * db/prepared.ts): parsed and planned once per connection, not per flush.
 *
 * The signed bytes are stored once, in raw_body: Postgres does not parse each
 * body into jsonb on the hot path (readers parse raw_body, see payloadOf).
 * payload is written only for a row that has no raw bytes.
 */
const INSERT_BATCH_SQL = `${preparedName('postroom_inbox_insert_v1')}
WITH inserted AS (
  INSERT INTO inbox (event_id, type, occurred_at, payload, raw_body, signature_header,
                     headers, endpoint_id, source, correspondence_id, secret_index, status, last_error)
  SELECT r.id, r.type, r.at, r.payload::jsonb,
         CASE WHEN r.len >= 0 THEN substring($2::bytea FROM r.off + 1 FOR r.len) END,
         r.sig, r.headers, r.endpoint, r.source, r.cid, r.secret, r.status, r.error
  FROM jsonb_to_recordset($1::jsonb) AS r(id text, type text, at timestamptz, payload text, off int, len int, sig text,
                                          headers jsonb, endpoint text, source text, cid text, secret smallint, status text, error text)
  ON CONFLICT (event_id) DO NOTHING
  RETURNING event_id
),
counted AS (SELECT count(*)::int AS n FROM inserted)
SELECT counted.n,
       CASE WHEN counted.n < $3::int THEN (SELECT coalesce(array_agg(event_id), '{}') FROM inserted) END AS ids,
       (CASE WHEN counted.n > 0 THEN pg_notify('${INBOX_CHANNEL}', '') END) IS NULL AS notified
FROM counted`;

interface RowJson {
  id: string;
  type: string;
  at: string | null;
  payload: string | null;
  off: number;
  len: number;
  sig: string | null;
  headers: Record<string, string> | null;
  endpoint: string | null;
  source: string;
  cid: string | null;
  secret: number | null;
  status: string;
  error: string | null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** JSON.stringify writes a lone surrogate as a \udXXX escape (a valid pair goes out as is). */
const ESCAPED_SURROGATE = /\\ud[89a-f]/i;

/**
 * The rows as JSON. A lone UTF-16 surrogate (possible in a quarantined row's id
 * or error text) would make jsonb refuse the whole batch; as text parameters the
 * driver wrote it as U+FFFD, and so do we, so what is stored does not change.
 */
function rowsJson(rows: RowJson[]): string {
  const json = JSON.stringify(rows);
  if (!ESCAPED_SURROGATE.test(json)) return json;
  return JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'string' ? value.replace(LONE_SURROGATE, '\uFFFD') : value));
}

/** Inserts events (unique ids expected) and returns the set of ids that were new. */
export async function insertInboxBatch(q: Queryable, events: readonly NewInboxEvent[]): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const n = events.length;
  const rows = new Array<RowJson>(n);
  const bodies: Buffer[] = [];
  let offset = 0;
  for (let i = 0; i < n; i++) {
    const e = events[i]!;
    const body = e.rawBody;
    rows[i] = {
      id: e.eventId,
      type: e.type,
      at: e.occurredAt,
      payload: body ? null : e.payloadJson,
      off: offset,
      len: body ? body.length : -1,
      sig: e.signatureHeader,
      headers: e.headers,
      endpoint: e.endpointId,
      source: e.source,
      cid: e.correspondenceId,
      secret: e.secretIndex,
      status: e.status,
      error: e.lastError,
    };
    if (body) {
      bodies.push(body);
      offset += body.length;
    }
  }
  const res = await q.query<{ n: number; ids: string[] | null }>(INSERT_BATCH_SQL, [rowsJson(rows), Buffer.concat(bodies, offset), n]);
  const ids = res.rows[0]?.ids;
  return ids ? new Set(ids) : new Set(events.map((e) => e.eventId));
}
