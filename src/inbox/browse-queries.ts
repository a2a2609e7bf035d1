import { named } from '../db/statement.js';
import type { Queryable } from '../db/types.js';
import { INSTANT_TEXT } from './by-id.js';
import { shownStatus } from './in-flight.js';
import { payloadOf } from './payload.js';
import type { InboxRecord, InboxStatus } from './types.js';

/**
 * Browsing the inbox newest first, a page at a time, at any size: the console's inbox view and the
 * correspondence timeline. Every page reads a bounded number of rows whatever the filter, so a page
 * costs the same on a year of events as on a day.
 *
 * One condition drives each page through an index: the event id (its hash index), the correspondence
 * (inbox_correspondence_idx), a status an operator looks for (inbox_attention_idx for failed, dead and
 * quarantined; inbox_unfinished_idx for received and processing), or else receipt time alone
 * (inbox_received_idx). The page walks that index newest first from the cursor and reads at most
 * SCAN_WINDOW rows; the other conditions (type, endpoint, a status read from a wider index) filter that
 * window. A page that found fewer matches than it asked for in a full window says where it stopped, and
 * the next page goes on from there: a rare type over ten million events costs a few pages, never a scan.
 * Nothing counts all matching rows.
 */
export interface BrowseFilter {
  status?: InboxStatus | undefined;
  type?: string | undefined;
  correspondenceId?: string | undefined;
  eventId?: string | undefined;
  endpointId?: string | undefined;
  /** Received at or after. */
  from?: Date | undefined;
  /** Received before. */
  until?: Date | undefined;
}

/** Where a page stopped: received_at as text to the microsecond (a Date keeps milliseconds), and the event id. */
export interface BrowseCursor {
  receivedAt: string;
  eventId: string;
}

export interface InboxPage {
  rows: InboxRecord[];
  /** Where the next (older) page starts; null when nothing older can match. */
  next: BrowseCursor | null;
  /** Rows this page read from the index that drives it. */
  scanned: number;
  /** True when the page stopped at its scan window rather than at its limit: older matches may still exist. */
  windowFull: boolean;
}

/** Rows one page reads at most from its driving index. */
export const SCAN_WINDOW = 2000;

const CURSOR_TEXT = `to_char(i.received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
const LIST_COLUMNS = `i.event_id, i.type, ${shownStatus('i')} AS status, i.source, i.occurred_at, i.received_at, i.correspondence_id,
  i.endpoint_id, i.attempts, i.next_attempt_at, i.last_error, i.processed_at, ${CURSOR_TEXT} AS cursor_at`;
const NEWEST_FIRST = 'ORDER BY received_at DESC, event_id COLLATE "C" DESC';
const NEWEST_FIRST_I = 'ORDER BY i.received_at DESC, i.event_id COLLATE "C" DESC';

/** The index-backed condition a page walks, and the conditions left for its window. */
function plan(filter: BrowseFilter, params: unknown[]): { driving: string[]; residual: string[] } {
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  const driving: string[] = [];
  const residual: string[] = [];
  let statusDone = false;
  if (filter.eventId !== undefined) driving.push(`i.event_id = ${p(filter.eventId)}`);
  else if (filter.correspondenceId !== undefined) driving.push(`i.correspondence_id = ${p(filter.correspondenceId)}`);
  else if (filter.status === 'dead' || filter.status === 'quarantined') {
    driving.push(`i.status = ${p(filter.status)}`);
    statusDone = true;
  } else if (filter.status === 'failed') driving.push(`i.status = 'failed'`);
  else if (filter.status === 'received' || filter.status === 'processing')
    // inbox_unfinished_idx's own predicate, so the planner can use it.
    driving.push(`i.status IN ('received', 'processing', 'failed')`);
  if (filter.eventId !== undefined && filter.correspondenceId !== undefined)
    residual.push(`w.correspondence_id = ${p(filter.correspondenceId)}`);
  if (filter.status !== undefined && !statusDone) residual.push(`w.status = ${p(filter.status)}`);
  if (filter.type !== undefined) residual.push(`w.type = ${p(filter.type)}`);
  if (filter.endpointId !== undefined) residual.push(`w.endpoint_id = ${p(filter.endpointId)}`);
  if (filter.from !== undefined) driving.push(`i.received_at >= ${p(filter.from)}`);
  if (filter.until !== undefined) driving.push(`i.received_at < ${p(filter.until)}`);
  return { driving, residual };
}

type PageRow = InboxRecord & { cursor_at: string; scanned: number; last_at: string | null; last_id: string | null };

/** One page of the inbox, newest first, older than `before` (the first page when null). */
export async function pageInbox(q: Queryable, filter: BrowseFilter, before: BrowseCursor | null, limit: number): Promise<InboxPage> {
  const params: unknown[] = [];
  const { driving, residual } = plan(filter, params);
  if (before) {
    params.push(before.receivedAt, before.eventId);
    const t = `$${params.length - 1}::timestamptz`;
    const e = `$${params.length}::text`;
    driving.push(`i.received_at <= ${t} AND (i.received_at < ${t} OR i.event_id COLLATE "C" < ${e} COLLATE "C")`);
  }
  params.push(SCAN_WINDOW, limit + 1);
  const windowParam = `$${params.length - 1}`;
  const limitParam = `$${params.length}`;
  const where = (conditions: string[]): string => (conditions.length ? `WHERE ${conditions.join(' AND ')}` : '');
  const res = await q.query<PageRow>(
    `WITH w AS MATERIALIZED (
       SELECT ${LIST_COLUMNS} FROM inbox i ${where(driving)} ${NEWEST_FIRST_I} LIMIT ${windowParam}
     ),
     meta AS (
       SELECT (SELECT count(*) FROM w)::int AS scanned, l.cursor_at AS last_at, l.event_id AS last_id
       FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT cursor_at, event_id FROM w ORDER BY received_at, event_id COLLATE "C" LIMIT 1) l ON true
     )
     SELECT hits.*, meta.scanned, meta.last_at, meta.last_id
     FROM meta LEFT JOIN LATERAL (SELECT * FROM w ${where(residual)} ${NEWEST_FIRST} LIMIT ${limitParam}) hits ON true
     ORDER BY hits.received_at DESC, hits.event_id COLLATE "C" DESC`,
    params,
  );
  const all = res.rows;
  const meta = all[0];
  const scanned = Number(meta?.scanned ?? 0);
  const hits = all.filter((r) => r.event_id !== null);
  const windowFull = scanned >= SCAN_WINDOW;
  let next: BrowseCursor | null = null;
  if (hits.length > limit) {
    const last = hits[limit - 1]!;
    next = { receivedAt: last.cursor_at, eventId: last.event_id };
  } else if (windowFull && filter.eventId === undefined && meta?.last_at && meta.last_id) {
    next = { receivedAt: meta.last_at, eventId: meta.last_id };
  }
  const rows = hits.slice(0, limit).map(({ cursor_at: _c, scanned: _s, last_at: _a, last_id: _i, ...row }) => row as InboxRecord);
  return { rows, next, scanned, windowFull: windowFull && hits.length <= limit };
}

/** An event of a correspondence as its timeline shows it: what it said, with the row's fate. */
export interface TimelineEvent extends InboxRecord {
  payload: unknown;
}

/**
 * A correspondence's events, the latest received `limit` of them (inbox_correspondence_idx), in the order
 * their `at` gives (then event id, as the worker orders them). `more` says older ones were left out.
 */
export async function correspondenceEvents(
  q: Queryable,
  correspondenceId: string,
  limit: number,
): Promise<{ events: TimelineEvent[]; more: boolean }> {
  const res = await q.query<TimelineEvent & { raw_body: Uint8Array | null }>(
    `SELECT ${LIST_COLUMNS}, i.payload, CASE WHEN i.payload IS NULL THEN i.raw_body END AS raw_body
     FROM inbox i WHERE i.correspondence_id = $1
     ORDER BY i.received_at DESC, i.event_id COLLATE "C" DESC LIMIT $2`,
    [correspondenceId, limit + 1],
  );
  const more = res.rows.length > limit;
  const events = res.rows.slice(0, limit).map(({ raw_body, ...row }) => {
    const { cursor_at: _cursor, ...event } = row as TimelineEvent & { cursor_at?: string };
    return { ...event, payload: payloadOf({ payload: event.payload, raw_body, status: event.status }) };
  });
  const at = (e: TimelineEvent): number => (e.occurred_at ? new Date(e.occurred_at).getTime() : new Date(e.received_at).getTime());
  events.sort((a, b) => at(a) - at(b) || (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0));
  return { events, more };
}

/** The unfinished event that comes first in a correspondence's order before this one, if any. */
export interface EarlierUnfinished {
  event_id: string;
  type: string;
  status: string;
  occurred_at: Date | null;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
}

/**
 * When the oldest unfinished event was received (INSTANT_TEXT, which keeps its microseconds). Prepared and without
 * parameters, so its plan over every partition is made once per connection, not on every call.
 */
const OLDEST_UNFINISHED_AT_SQL = named(
  'inbox_oldest_unfinished_at',
  `SELECT ${INSTANT_TEXT} AS at FROM inbox WHERE status IN ('received', 'processing', 'failed') ORDER BY received_at LIMIT 1`,
);

/**
 * The earliest unfinished event of the correspondence ordered before this one (by occurred_at, then event
 * id compared bytewise, as the claim orders them): what may be holding it back (inbox_ordering_idx).
 * Whether it holds depends on its status and the ordering hold (src/worker/claim-queries.ts).
 *
 * No unfinished event was received before the oldest one, so that instant, passed as a parameter, bounds the
 * plan to the days of the backlog while it is made: over a year of daily partitions, a plan of every day took
 * 30-50 ms, against about 1 ms for the days since the oldest unfinished event.
 */
export async function earlierUnfinished(
  q: Queryable,
  e: { correspondenceId: string; occurredAt: Date; eventId: string },
): Promise<EarlierUnfinished | undefined> {
  const since = (await q.query<{ at: string }>(OLDEST_UNFINISHED_AT_SQL)).rows[0]?.at;
  if (since === undefined) return undefined;
  const res = await q.query<EarlierUnfinished>(
    `SELECT i.event_id, i.type, ${shownStatus('i')} AS status, i.occurred_at, i.attempts, i.next_attempt_at, i.last_error
     FROM inbox i
     WHERE i.correspondence_id = $1 AND i.status IN ('received', 'processing', 'failed') AND i.received_at >= $4::timestamptz
       AND i.occurred_at <= $2 AND (i.occurred_at < $2 OR i.event_id COLLATE "C" < $3 COLLATE "C")
     ORDER BY i.correspondence_id, i.occurred_at LIMIT 1`,
    [e.correspondenceId, e.occurredAt, e.eventId, since],
  );
  return res.rows[0];
}
