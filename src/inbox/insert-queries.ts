import { arrayLiteral, type ArrayElement } from '../db/array-literal.js';
import { PARTITIONS_AHEAD_DAYS } from '../db/inbox-layout.js';
import { named } from '../db/statement.js';
import type { Queryable } from '../db/types.js';
import { flushLockKeys, int4Array, type FlushLockKeys, type FlushLockSeed } from './flush-locks.js';
import { INBOX_CHANNEL, type NewInboxEvent } from './types.js';

/**
 * One statement inserts a whole batch, and one pg_notify announces the flush when anything was new:
 * - every id goes first into the ledger (inbox_ids, migration 023), which holds every id ever stored,
 *   even after retention dropped its row's partition; a conflict there is a duplicate, and only the ids
 *   the ledger took go into the history, with the instant the ledger recorded (the partition key), in the
 *   same statement and so the same transaction;
 * - columns travel as arrays, a constant parameter count whatever the batch size; the bodies as one
 *   binary parameter, each row taking its slice by offset and length (as a text array they would be
 *   base64-encoded, escaped by the driver and decoded by Postgres: a third more bytes, three passes);
 * - the signed bytes are stored once, in raw_body, and not parsed into jsonb on the hot path (readers
 *   parse raw_body: payloadOf); payload is written only for a row without raw bytes;
 * - the usual kept headers (accept.ts) are the event id and type, which the row holds already, and a
 *   content type and user agent, which get columns of their own; readers build the headers back
 *   (migrations/010). Any other set of headers goes in headers, as JSON;
 * - the ledger's id is unique through an exclusion constraint over a hash index, so ON CONFLICT names no
 *   column;
 * - only the count of inserted rows comes back when it is the whole batch (nearly always), the ids
 *   only when some were duplicates.
 * Prepared (named()): planning it would cost Postgres about 0.2 ms on every flush (bench/statements.ts).
 * A redelivery that meets an id another flush holds is not written and not waited for (`locked`, below).
 */
/**
 * The statement for a batch, by what it carries:
 * - `ledger`: written through inbox_ids as above; without it, into a store that has no ledger yet (before
 *   migration 023), which is what this build's ingress writes while a rolling upgrade has started its pods
 *   before `postroom migrate` ran (deploy/k8s: `serve --no-migrate`): the inbox there is one table whose own
 *   exclusion constraint de-duplicates, and received_at has its default. Tried only after the ledger statement
 *   failed for want of the ledger (isLedgerMissing);
 * - `locked` (an ingress flush on Postgres): each row's advisory lock is tried first (flush-locks.ts), in
 *   event-id order, and only the rows whose lock was free are written; `busy` lists the others, which another
 *   flush holds and which this one never waits for. The batch is read once, into a materialised CTE, so each
 *   lock is tried exactly once;
 * - `traced`: the trace context (migration 028), only when a row of the flush has one: with tracing off, the
 *   statement is the same as on a store without the column.
 * Parameters: $1-$18 always; then the trace contexts when traced; then the lock keys when locked.
 */
function insertBatchText(ledger: boolean, locked: boolean, traced: boolean): string {
  const column = traced ? ', trace_context' : '';
  const keyParam = traced ? 20 : 19;
  const batch = `
WITH b AS MATERIALIZED (
  SELECT u.*${locked ? ', pg_try_advisory_xact_lock(u.key_high, u.key_low) AS free' : ''} FROM unnest(
    $1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::int4[], $6::int4[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[], $12::smallint[], $13::text[], $14::text[], $17::text[], $18::text[]${traced ? ', $19::text[]' : ''}${locked ? `, $${keyParam}::int4[], $${keyParam + 1}::int4[]` : ''}
  ) AS u(event_id, type, occurred_at, payload, raw_start, raw_length, signature_header,
         headers, endpoint_id, source, correspondence_id, secret_index, status, last_error, content_type, user_agent${column}${locked ? ', key_high, key_low' : ''})
),`;
  const free = locked ? 'WHERE b.free' : '';
  const rows = `b.type, b.occurred_at, ${ledger ? 'f.received_at, ' : ''}b.payload::jsonb,
         CASE WHEN b.raw_length IS NOT NULL THEN substring($16::bytea FROM b.raw_start FOR b.raw_length) END,
         b.signature_header, b.headers::jsonb, b.content_type, b.user_agent,
         b.endpoint_id, b.source, b.correspondence_id, b.secret_index, b.status, b.last_error${traced ? ', b.trace_context' : ''}`;
  const into = `inbox (event_id, type, occurred_at, ${ledger ? 'received_at, ' : ''}payload, raw_body, signature_header, headers,
                     delivery_content_type, delivery_user_agent,
                     endpoint_id, source, correspondence_id, secret_index, status, last_error${column})`;
  const write = ledger
    ? `
fresh AS (
  INSERT INTO inbox_ids (event_id, received_at)
  SELECT b.event_id, now() FROM b ${free}
  ON CONFLICT DO NOTHING
  RETURNING event_id, received_at
),
inserted AS (
  INSERT INTO ${into}
  SELECT b.event_id, ${rows}
  FROM b JOIN fresh f ON f.event_id = b.event_id
  -- A no-op on the partitioned inbox, which has no unique constraint. While migration 023's backfill has not
  -- yet brought every stored id into the ledger, the inbox is still the one table with its own constraint, and
  -- the ledger may take an id that table already holds: the row is skipped, and the id answered duplicate.
  ON CONFLICT DO NOTHING
  RETURNING event_id
),`
    : `
inserted AS (
  INSERT INTO ${into}
  SELECT b.event_id, ${rows}
  FROM b ${free}
  ON CONFLICT DO NOTHING
  RETURNING event_id
),`;
  return `${batch}${write}
counted AS (SELECT count(*)::int AS n FROM inserted)
SELECT counted.n,
       CASE WHEN counted.n < $15::int THEN (SELECT coalesce(array_agg(event_id), '{}') FROM inserted) END AS ids,
       ${locked ? '(SELECT array_agg(event_id) FROM b WHERE NOT b.free) AS busy, ' : ''}(CASE WHEN counted.n > 0 THEN pg_notify('${INBOX_CHANNEL}', '') END) IS NULL AS notified
FROM counted`;
}

/** Each variant prepared once (named()): planning it would cost Postgres about 0.2 ms on every flush. */
const STATEMENTS = new Map<string, ReturnType<typeof named>>();
function insertBatchSql(ledger: boolean, locked: boolean, traced: boolean): ReturnType<typeof named> {
  const name = `insert_batch${ledger ? '' : '_before_ledger'}${locked ? '_locked' : ''}${traced ? '_traced' : ''}`;
  let statement = STATEMENTS.get(name);
  if (!statement) STATEMENTS.set(name, (statement = named(name, insertBatchText(ledger, locked, traced))));
  return statement;
}

/** undefined_table naming the ledger: the store has not applied migration 023 yet. */
function isLedgerMissing(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '42P01' && typeof e.message === 'string' && e.message.includes('inbox_ids');
}

/**
 * The content type and user agent (either may be absent, not both) of headers that hold only those
 * and the two delivery id headers, with the row's own id and type; undefined for any other set,
 * which is kept as JSON.
 */
function usualHeaders(
  eventId: string,
  type: string,
  headers: Readonly<Record<string, string>>,
): { contentType: string | undefined; userAgent: string | undefined } | undefined {
  let count = 0;
  for (const name in headers) {
    if (!Object.prototype.hasOwnProperty.call(headers, name)) return undefined;
    count++;
  }
  if (headers['x-service-event-id'] !== eventId || headers['x-service-event-type'] !== type) return undefined;
  const contentType = headers['content-type'];
  const userAgent = headers['user-agent'];
  const others = (contentType === undefined ? 0 : 1) + (userAgent === undefined ? 0 : 1);
  if (others === 0 || count !== 2 + others) return undefined;
  return { contentType, userAgent };
}

/** SQLSTATE classes caused by the rows rather than the store being down. */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}

/**
 * A row whose receipt day has no partition yet (23514, "no partition of relation ... found for row"):
 * the leader keeps PARTITIONS_AHEAD_DAYS of them ready, so this means it has not run for days. Not the
 * rows' fault: the writer creates the partitions and writes the flush again.
 */
export function isMissingPartition(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '23514' && typeof e.message === 'string' && e.message.includes('no partition of relation');
}

/** Creates today's partition and the next days' when missing; returns how many it created. */
export async function ensureInboxPartitions(q: Queryable): Promise<number> {
  const res = await q.query<{ n: number }>('SELECT inbox_partitions_ensure($1::int) AS n', [PARTITIONS_AHEAD_DAYS]);
  return Number(res.rows[0]?.n ?? 0);
}

const byEventId = (a: NewInboxEvent, b: NewInboxEvent): number => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

/**
 * Inserts events (unique ids expected) and returns the set of ids that were new.
 *
 * Rows go in in event-id order. Two replicas flushing at once share ids whenever
 * the service retries a delivery still waiting on the first one's commit, and
 * each waits at a shared id until the other's flush ends: in arrival order, each
 * could hold an id the other waits on, a deadlock Postgres ends after
 * deadlock_timeout by failing one flush, whose whole batch is then answered 503.
 * In one order, the first to reach a shared id has already passed every smaller
 * one, so waits never form a cycle.
 */
export async function insertInboxBatch(q: Queryable, unordered: readonly NewInboxEvent[]): Promise<Set<string>> {
  return (await insertFlush(q, unordered, undefined)).inserted;
}

/** What one flush wrote: the new ids, and those another flush holds (`locks` given), which it did not touch. */
export interface FlushWrite {
  inserted: Set<string>;
  busy: Set<string> | undefined;
}

/**
 * As insertInboxBatch, for an ingress flush: with `locks` (Postgres), each id's advisory lock is taken first and
 * an id whose lock another flush holds is skipped and reported busy instead of waited for (flush-locks.ts).
 */
export async function insertFlush(
  q: Queryable,
  unordered: readonly NewInboxEvent[],
  locks: FlushLockSeed | undefined,
): Promise<FlushWrite> {
  if (unordered.length === 0) return { inserted: new Set(), busy: undefined };
  const events = unordered.length === 1 ? unordered : [...unordered].sort(byEventId);
  const keys = locks && flushLockKeys(locks, events);
  const traced = anyTraced(events);
  const params = statementParams(events, keys, traced);
  type Row = { n: number; ids: string[] | null; busy?: string[] | null };
  const res = await q.query<Row>(insertBatchSql(true, keys !== undefined, traced), params).catch((err: unknown) => {
    if (!isLedgerMissing(err)) throw err;
    return q.query<Row>(insertBatchSql(false, keys !== undefined, traced), params);
  });
  const ids = res.rows[0]?.ids;
  const busy = res.rows[0]?.busy;
  return { inserted: ids ? new Set(ids) : new Set(events.map((e) => e.eventId)), busy: busy ? new Set(busy) : undefined };
}

/** Whether a row of the flush carries a trace context (the trace_context column is written only then). */
function anyTraced(events: readonly NewInboxEvent[]): boolean {
  for (const e of events) if (e.traceContext) return true;
  return false;
}

/** The statement's parameters: a column array each, the bodies as one bytea, the trace contexts and lock keys when used. */
function statementParams(events: readonly NewInboxEvent[], keys: FlushLockKeys | undefined, traced: boolean): unknown[] {
  const n = events.length;
  const cols: ArrayElement[][] = Array.from({ length: 17 }, () => new Array<ArrayElement>(n));
  const bodies: Uint8Array[] = [];
  // 1-based, as substring counts.
  let start = 1;
  for (let i = 0; i < n; i++) {
    const e = events[i]!;
    cols[0]![i] = e.eventId;
    cols[1]![i] = e.type;
    cols[2]![i] = e.occurredAt;
    cols[3]![i] = e.rawBody ? null : e.payloadJson;
    cols[4]![i] = e.rawBody ? start : null;
    cols[5]![i] = e.rawBody ? e.rawBody.length : null;
    if (e.rawBody) {
      bodies.push(e.rawBody);
      start += e.rawBody.length;
    }
    cols[6]![i] = e.signatureHeader;
    const usual = e.headers ? usualHeaders(e.eventId, e.type, e.headers) : undefined;
    cols[7]![i] = usual || !e.headers ? null : JSON.stringify(e.headers);
    cols[14]![i] = usual?.contentType ?? null;
    cols[15]![i] = usual?.userAgent ?? null;
    cols[8]![i] = e.endpointId;
    cols[9]![i] = e.source;
    cols[10]![i] = e.correspondenceId;
    cols[11]![i] = e.secretIndex;
    cols[12]![i] = e.status;
    cols[13]![i] = e.lastError;
    if (traced) cols[16]![i] = e.traceContext ?? null;
  }
  const params: unknown[] = [
    ...cols.slice(0, 14).map(arrayLiteral),
    n,
    Buffer.concat(bodies, start - 1),
    arrayLiteral(cols[14]!),
    arrayLiteral(cols[15]!),
  ];
  if (traced) params.push(arrayLiteral(cols[16]!));
  if (keys) params.push(int4Array(keys.high), int4Array(keys.low));
  return params;
}
