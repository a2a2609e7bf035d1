import { named } from '../db/statement.js';
import type { Queryable } from '../db/types.js';
import { shownStatus } from './in-flight.js';

/**
 * Counting the inbox without reading it: the statuses a row passes through or
 * stops in for attention are bounded sets that partial indexes hold
 * (inbox_unfinished_idx, inbox_attention_idx), and finished events, nearly every
 * row, are read from inbox_tally (migration 007). Cost follows the backlog and
 * the dead letters, not the number of events ever received.
 *
 * Prepared (named()): the inbox is partitioned by day (migration 024), and planning these over the 90-odd
 * days retention keeps costs more than running them; a connection plans each once.
 */
const BY_TYPE_AND_STATUS_SQL = named(
  'inbox_counts_by_type',
  `
SELECT type, ${shownStatus()} AS status, count(*)::bigint AS n FROM inbox WHERE status IN ('received', 'processing', 'failed') GROUP BY 1, 2
UNION ALL
SELECT type, status, count(*)::bigint FROM inbox WHERE status IN ('dead', 'quarantined') GROUP BY type, status
UNION ALL
SELECT type, status, sum(n)::bigint FROM inbox_tally GROUP BY type, status HAVING sum(n) <> 0`,
);

const BY_STATUS_SQL = named(
  'inbox_counts_by_status',
  `
SELECT ${shownStatus()} AS status, count(*)::bigint AS n FROM inbox WHERE status IN ('received', 'processing', 'failed') GROUP BY 1
UNION ALL
SELECT status, count(*)::bigint FROM inbox WHERE status IN ('dead', 'quarantined') GROUP BY status
UNION ALL
SELECT status, sum(n)::bigint FROM inbox_tally GROUP BY status`,
);

/** inbox_unfinished_idx: the first entry is the answer. */
const OLDEST_UNFINISHED_SQL = named(
  'inbox_oldest_unfinished',
  `
SELECT event_id, received_at, extract(epoch FROM now() - received_at)::float8 AS age
FROM inbox WHERE status IN ('received', 'processing', 'failed') ORDER BY received_at LIMIT 1`,
);

export interface StatusCounts {
  by_status: Record<string, number>;
  oldestUnfinishedAgeSeconds: number;
}

/** For every scrape: two index-bounded counts, a read of inbox_tally, and one index probe. */
export async function inboxStatusCounts(q: Queryable): Promise<StatusCounts> {
  const counts = await q.query<{ status: string; n: string | number }>(BY_STATUS_SQL);
  const oldest = await q.query<{ age: number | null }>(OLDEST_UNFINISHED_SQL);
  const by_status: Record<string, number> = {};
  for (const r of counts.rows) by_status[r.status] = (by_status[r.status] ?? 0) + Number(r.n);
  return { by_status, oldestUnfinishedAgeSeconds: Math.max(0, Number(oldest.rows[0]?.age ?? 0)) };
}

export interface InboxStats {
  by_status: Record<string, number>;
  by_type: Record<string, Record<string, number>>;
  total: number;
  /** The oldest event still received, processing or failed; null when there is none. */
  oldest_unprocessed: { event_id: string; received_at: string; age_seconds: number } | null;
}

export async function inboxStats(q: Queryable): Promise<InboxStats> {
  const counts = await q.query<{ type: string; status: string; n: string | number }>(BY_TYPE_AND_STATUS_SQL);
  const oldest = await q.query<{ event_id: string; received_at: Date; age: number }>(OLDEST_UNFINISHED_SQL);
  const stats: InboxStats = { by_status: {}, by_type: {}, total: 0, oldest_unprocessed: null };
  const rows = [...counts.rows].sort((a, b) => (a.type === b.type ? (a.status < b.status ? -1 : 1) : a.type < b.type ? -1 : 1));
  for (const r of rows) {
    const n = Number(r.n);
    stats.by_status[r.status] = (stats.by_status[r.status] ?? 0) + n;
    const by_type = (stats.by_type[r.type] ??= {});
    by_type[r.status] = (by_type[r.status] ?? 0) + n;
    stats.total += n;
  }
  const o = oldest.rows[0];
  if (o)
    stats.oldest_unprocessed = {
      event_id: o.event_id,
      received_at: new Date(o.received_at).toISOString(),
      age_seconds: Math.max(0, Number(o.age)),
    };
  return stats;
}

/**
 * What Postgres needs to keep de-duplication fast: the event-id index every new
 * event inserts into, against the buffers it has. Catalogue and file sizes only,
 * no table read. Undefined where the store has no such index (not migrated). It is
 * the ledger's hash index (migration 023); on a store migrated only up to 022 the
 * inbox's own (012), and up to 011 the inbox's B-tree primary key.
 */
const SIZING_SQL = `SELECT pg_relation_size(coalesce(to_regclass('inbox_ids_event_id_excl'), to_regclass('inbox_event_id_excl'), to_regclass('inbox_pkey')))::float8 AS index_bytes,
       pg_size_bytes(current_setting('shared_buffers'))::float8 AS shared_buffers_bytes`;

export async function storeSizing(q: Queryable): Promise<{ indexBytes: number; sharedBuffersBytes: number } | undefined> {
  const row = (await q.query<{ index_bytes: number | null; shared_buffers_bytes: number }>(SIZING_SQL)).rows[0];
  if (row?.index_bytes == null) return undefined;
  return { indexBytes: Number(row.index_bytes), sharedBuffersBytes: Number(row.shared_buffers_bytes) };
}

/** Events received and finished per bucket since a time, from inbox_minutes (kept by triggers, migration 022). */
export interface MinuteCount {
  bucket: Date;
  kind: 'received' | 'finished';
  n: number;
}

/**
 * Counts in buckets of `bucketSeconds` (a whole number of minutes) from `since`: a range scan of
 * inbox_minutes's primary key, at most three days of minutes, whatever the size of the inbox.
 */
export async function minuteCounts(q: Queryable, since: Date, bucketSeconds: number): Promise<MinuteCount[]> {
  const res = await q.query<{ bucket: Date; kind: 'received' | 'finished'; n: string | number }>(
    `SELECT to_timestamp(floor(extract(epoch FROM minute) / $2) * $2) AS bucket, kind, sum(n)::bigint AS n
     FROM inbox_minutes WHERE minute >= $1 GROUP BY 1, 2 ORDER BY 1, 2`,
    [since, bucketSeconds],
  );
  return res.rows.map((r) => ({ bucket: new Date(r.bucket), kind: r.kind, n: Number(r.n) }));
}
