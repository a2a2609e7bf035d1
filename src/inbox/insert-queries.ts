import { arrayLiteral, type ArrayElement } from '../db/array-literal.js';
import { named } from '../db/statement.js';
import { PostroomError } from '../errors.js';
import { COPY_COLUMNS, COPY_COLUMNS_TRACED, encodeCopyRows, type CopyRow } from './copy-rows.js';
import type { Queryable } from '../db/types.js';
import { copyLocks, flushLockKeys, int4Array, type FlushLockKeys, type FlushLockSeed } from './flush-locks.js';
import { INBOX_CHANNEL, type NewInboxEvent } from './types.js';

/**
 * One statement inserts a whole batch, and one pg_notify announces the flush when anything was new:
 * - columns travel as arrays, a constant parameter count whatever the batch size; the bodies as one
 *   binary parameter, each row taking its slice by offset and length (as a text array they would be
 *   base64-encoded, escaped by the driver and decoded by Postgres: a third more bytes, three passes);
 * - the signed bytes are stored once, in raw_body, and not parsed into jsonb on the hot path (readers
 *   parse raw_body: payloadOf); payload is written only for a row without raw bytes;
 * - the usual kept headers (accept.ts) are the event id and type, which the row holds already, and a
 *   content type and user agent, which get columns of their own; readers build the headers back
 *   (migrations/010). Any other set of headers goes in headers, as JSON;
 * - a conflict on the event id is skipped. Its constraint is an exclusion constraint over a hash index
 *   (migrations/012), so ON CONFLICT names no column; the inbox has no other unique constraint;
 * - only the count of inserted rows comes back when it is the whole batch (nearly always), the ids
 *   only when some were duplicates.
 * Prepared (named()): planning it would cost Postgres about 0.2 ms on every flush (bench/statements.ts).
 */
const INSERT_BATCH_SQL = named('insert_batch', insertBatchText(false, false));
// The trace context (migrations/028) only when a row of the flush has one: with tracing off, the statement
// is the same as on a store without the column.
const INSERT_BATCH_TRACED_SQL = named('insert_batch_traced', insertBatchText(false, true));

/**
 * The same, for an ingress flush on Postgres: each row's advisory lock is tried first (flush-locks.ts), in
 * event-id order, and only the rows whose lock was free are inserted; `busy` lists the others. The batch is
 * read once, into a materialised CTE, so each lock is tried exactly once.
 */
const INSERT_LOCKED_BATCH_SQL = named('insert_batch_locked', insertBatchText(true, false));
const INSERT_LOCKED_BATCH_TRACED_SQL = named('insert_batch_locked_traced', insertBatchText(true, true));

/** $1-$18 always; then the trace contexts when traced; then the lock keys when locked. */
function insertBatchText(locked: boolean, traced: boolean): string {
  const column = traced ? ', trace_context' : '';
  const keyParam = traced ? 20 : 19;
  const input = `unnest(
    $1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::int4[], $6::int4[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[], $12::smallint[], $13::text[], $14::text[], $17::text[], $18::text[]${traced ? ', $19::text[]' : ''}${locked ? `, $${keyParam}::int4[], $${keyParam + 1}::int4[]` : ''}
  ) AS b(event_id, type, occurred_at, payload, raw_start, raw_length, signature_header,
         headers, endpoint_id, source, correspondence_id, secret_index, status, last_error, content_type, user_agent${column}${locked ? ', key_high, key_low' : ''})`;
  return `
WITH ${
    locked
      ? `batch AS MATERIALIZED (SELECT b.*, pg_try_advisory_xact_lock(b.key_high, b.key_low) AS free FROM ${input}),
`
      : ''
  }inserted AS (
  INSERT INTO inbox (event_id, type, occurred_at, payload, raw_body, signature_header, headers,
                     delivery_content_type, delivery_user_agent,
                     endpoint_id, source, correspondence_id, secret_index, status, last_error${column})
  SELECT b.event_id, b.type, b.occurred_at, b.payload::jsonb,
         CASE WHEN b.raw_length IS NOT NULL THEN substring($16::bytea FROM b.raw_start FOR b.raw_length) END,
         b.signature_header, b.headers::jsonb, b.content_type, b.user_agent,
         b.endpoint_id, b.source, b.correspondence_id, b.secret_index, b.status, b.last_error${traced ? ', b.trace_context' : ''}
  FROM ${locked ? 'batch AS b WHERE b.free' : input}
  ON CONFLICT DO NOTHING
  RETURNING event_id
),
counted AS (SELECT count(*)::int AS n FROM inserted)
SELECT counted.n,
       CASE WHEN counted.n < $15::int THEN (SELECT coalesce(array_agg(event_id), '{}') FROM inserted) END AS ids,
       ${
         locked
           ? `(SELECT array_agg(event_id) FROM batch WHERE NOT free) AS busy,
       `
           : ''
       }(CASE WHEN counted.n > 0 THEN pg_notify('${INBOX_CHANNEL}', '') END) IS NULL AS notified
FROM counted`;
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

/**
 * How long a COPY may wait for a lock, above all for another transaction that holds
 * the same event id. The id is unique through an exclusion constraint (migration
 * 012), which Postgres checks after inserting: two replicas copying the same id at
 * once each find the other's row and wait for the other, a deadlock Postgres breaks
 * only after deadlock_timeout (1 s) by failing one. The statement above does not
 * deadlock (ON CONFLICT checks before it inserts, and gives way), so a COPY that
 * waits this long gives up, and the statement writes the flush.
 */
const COPY_LOCK_TIMEOUT = '50ms';

/**
 * Rows in Postgres's binary COPY format instead of the statement above: per flush
 * of 32 rows, 0.78 times the statement's Postgres time and 0.9 times its WAL (heap
 * rows go in a page at a time; `npx tsx bench/statements.ts`), and no array
 * literals to build.
 * In the same implicit transaction, the NOTIFY goes out only if the rows commit.
 *
 * COPY has no ON CONFLICT: one id already stored fails it whole, and the statement
 * above runs instead. A flush rarely holds a duplicate, but after an outage the
 * service's retries can make most flushes hold one, and each refused COPY would be
 * work thrown away; so after a refusal the writer inserts for a while (CopyChoice).
 */
const copyAndNotify = (columns: string): string => `COPY inbox (${columns}) FROM STDIN (FORMAT binary); NOTIFY ${INBOX_CHANNEL}`;
const COPY_AND_NOTIFY = copyAndNotify(COPY_COLUMNS);
const COPY_TRACED_AND_NOTIFY = copyAndNotify(COPY_COLUMNS_TRACED);
const withLockTimeout = (copy: string): string => `SELECT set_config('lock_timeout', '${COPY_LOCK_TIMEOUT}', true); ${copy}`;

/** Whether a row of the flush carries a trace context (the trace_context column is written only then). */
function anyTraced(events: readonly NewInboxEvent[]): boolean {
  for (const e of events) if (e.traceContext) return true;
  return false;
}

/** SQLSTATE classes caused by the rows rather than the store being down. */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}

/** lock_not_available (COPY_LOCK_TIMEOUT) or deadlock_detected: the COPY wrote nothing. */
function isLockWaitGivenUp(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '55P03' || code === '40P01';
}

/** The COPY input for these rows, or undefined when one of them needs the statement. */
function copyInput(events: readonly NewInboxEvent[], traced: boolean): Buffer | undefined {
  const rows: CopyRow[] = new Array<CopyRow>(events.length);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (!e.rawBody || e.status !== 'received' || e.lastError !== null) return undefined;
    const usual = e.headers ? usualHeaders(e.eventId, e.type, e.headers) : undefined;
    rows[i] = {
      eventId: e.eventId,
      type: e.type,
      occurredAt: e.occurredAt,
      rawBody: e.rawBody,
      signatureHeader: e.signatureHeader,
      headersJson: usual || !e.headers ? null : JSON.stringify(e.headers),
      contentType: usual?.contentType ?? null,
      userAgent: usual?.userAgent ?? null,
      endpointId: e.endpointId,
      source: e.source,
      correspondenceId: e.correspondenceId,
      secretIndex: e.secretIndex,
      status: e.status,
      traceContext: e.traceContext ?? null,
    };
  }
  return encodeCopyRows(rows, traced);
}

/** Whether a flush may try COPY: after a refusal, the next flushes insert, for longer after each refusal in a row. */
export interface CopyChoice {
  use(): boolean;
  wrote(): void;
  refused(): void;
}

const FIRST_PAUSE = 8;
const LONGEST_PAUSE = 1024;

export function createCopyChoice(): CopyChoice {
  let pause = FIRST_PAUSE;
  let skip = 0;
  return {
    use() {
      if (skip === 0) return true;
      skip--;
      return false;
    },
    wrote() {
      pause = FIRST_PAUSE;
    },
    refused() {
      skip = pause;
      pause = Math.min(LONGEST_PAUSE, pause * 2);
    },
  };
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
 * one, so waits never form a cycle. COPY keeps that order too.
 *
 * With `copy` (ingress's writer passes one) and a store that speaks COPY outside a
 * transaction, the batch goes in by COPY first and by the statement when COPY
 * is refused; every other writer (the reconciler, in its transaction) inserts.
 */
export async function insertInboxBatch(q: Queryable, unordered: readonly NewInboxEvent[], copy?: CopyChoice): Promise<Set<string>> {
  return (await insertRows(q, unordered, copy, undefined)).inserted;
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
export function insertFlush(
  q: Queryable,
  unordered: readonly NewInboxEvent[],
  copy: CopyChoice | undefined,
  locks: FlushLockSeed | undefined,
): Promise<FlushWrite> {
  return insertRows(q, unordered, copy, locks);
}

async function insertRows(
  q: Queryable,
  unordered: readonly NewInboxEvent[],
  copy: CopyChoice | undefined,
  locks: FlushLockSeed | undefined,
): Promise<FlushWrite> {
  if (unordered.length === 0) return { inserted: new Set(), busy: undefined };
  const events = unordered.length === 1 ? unordered : [...unordered].sort(byEventId);
  const keys = locks && flushLockKeys(locks, events);
  const traced = anyTraced(events);
  if (copy && q.copyIn && copy.use()) {
    const data = copyInput(events, traced);
    if (data) {
      try {
        const copySql = traced ? COPY_TRACED_AND_NOTIFY : COPY_AND_NOTIFY;
        const rows = await q.copyIn(keys ? `${copyLocks(keys, COPY_LOCK_TIMEOUT)} ${copySql}` : withLockTimeout(copySql), data);
        if (rows !== events.length) {
          throw new PostroomError('inbox_copy_inconsistent', `COPY wrote ${rows} of ${events.length} inbox rows`);
        }
        copy.wrote();
        return { inserted: new Set(events.map((e) => e.eventId)), busy: undefined };
      } catch (err) {
        // A row Postgres refused, an id already stored (COPY cannot skip it, and writes nothing), or a
        // wait for a lock given up: the statement below writes what is new and says what was not.
        if (!isDataError(err) && !isLockWaitGivenUp(err)) throw err;
        copy.refused();
      }
    }
  }
  const res = await q.query<{ n: number; ids: string[] | null; busy?: string[] | null }>(
    keys ? (traced ? INSERT_LOCKED_BATCH_TRACED_SQL : INSERT_LOCKED_BATCH_SQL) : traced ? INSERT_BATCH_TRACED_SQL : INSERT_BATCH_SQL,
    statementParams(events, keys, traced),
  );
  const ids = res.rows[0]?.ids;
  const busy = res.rows[0]?.busy;
  return { inserted: ids ? new Set(ids) : new Set(events.map((e) => e.eventId)), busy: busy ? new Set(busy) : undefined };
}

/** The statement's parameters: a column array each, the bodies as one bytea, and the lock keys when locking. */
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
