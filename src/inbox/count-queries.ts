import type { Queryable } from '../db/types.js';
import { shownStatus } from './in-flight.js';

/**
 * Counting the inbox without reading it: the statuses a row passes through or
 * stops in for attention are bounded sets that partial indexes hold
 * (inbox_ordering_idx for the unfinished ones, inbox_attention_idx), and finished
 * events, nearly every row, are read from inbox_tally (migration 007). Cost
 * follows the backlog and the dead letters, not the number of events ever received.
 */
const UNFINISHED = `status IN ('received', 'processing', 'failed')`;

const BY_TYPE_AND_STATUS_SQL = `
SELECT type, ${shownStatus()} AS status, count(*)::bigint AS n FROM inbox WHERE ${UNFINISHED} GROUP BY 1, 2
UNION ALL
SELECT type, status, count(*)::bigint FROM inbox WHERE status IN ('dead', 'quarantined') GROUP BY type, status
UNION ALL
SELECT type, status, sum(n)::bigint FROM inbox_tally GROUP BY type, status HAVING sum(n) <> 0`;

/**
 * The scrape's one statement: the counts, and with the unfinished ones the age of
 * the oldest, taken from the rows the count reads anyway (migration 015 dropped
 * the index that answered it apart).
 */
const BY_STATUS_SQL = `
SELECT ${shownStatus()} AS status, count(*)::bigint AS n, extract(epoch FROM now() - min(received_at))::float8 AS oldest_age
FROM inbox WHERE ${UNFINISHED} GROUP BY 1
UNION ALL
SELECT status, count(*)::bigint, NULL FROM inbox WHERE status IN ('dead', 'quarantined') GROUP BY status
UNION ALL
SELECT status, sum(n)::bigint, NULL FROM inbox_tally GROUP BY status`;

/**
 * The oldest unfinished event, ties by id, from one read of the backlog. OFFSET 0
 * plans the inner select on its own, for all its rows, which its partial index
 * serves: asked plainly (ORDER BY received_at LIMIT 1), the planner walks
 * inbox_received_idx from the first event ever received, filtering, and reads
 * every finished event when the backlog is young (1.2 s at three million events).
 */
const OLDEST_UNFINISHED_SQL = `
SELECT event_id, received_at, extract(epoch FROM now() - received_at)::float8 AS age
FROM (SELECT event_id, received_at FROM inbox WHERE ${UNFINISHED} OFFSET 0) backlog
ORDER BY received_at, event_id COLLATE "C" LIMIT 1`;

export interface StatusCounts {
  by_status: Record<string, number>;
  oldestUnfinishedAgeSeconds: number;
}

/** For every scrape: index-bounded counts of the backlog and the dead letters, and a read of inbox_tally. */
export async function inboxStatusCounts(q: Queryable): Promise<StatusCounts> {
  const counts = await q.query<{ status: string; n: string | number; oldest_age: number | null }>(BY_STATUS_SQL);
  const by_status: Record<string, number> = {};
  let oldestAge = 0;
  for (const r of counts.rows) {
    by_status[r.status] = (by_status[r.status] ?? 0) + Number(r.n);
    if (r.oldest_age !== null) oldestAge = Math.max(oldestAge, Number(r.oldest_age));
  }
  return { by_status, oldestUnfinishedAgeSeconds: oldestAge };
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
 * no table read. Undefined where the store has no such index (not migrated). The
 * B-tree primary key counts until migration 012 replaces it with the hash index.
 */
const SIZING_SQL = `SELECT pg_relation_size(coalesce(to_regclass('inbox_event_id_excl'), to_regclass('inbox_pkey')))::float8 AS index_bytes,
       pg_size_bytes(current_setting('shared_buffers'))::float8 AS shared_buffers_bytes`;

export async function storeSizing(q: Queryable): Promise<{ indexBytes: number; sharedBuffersBytes: number } | undefined> {
  const row = (await q.query<{ index_bytes: number | null; shared_buffers_bytes: number }>(SIZING_SQL)).rows[0];
  if (row?.index_bytes == null) return undefined;
  return { indexBytes: Number(row.index_bytes), sharedBuffersBytes: Number(row.shared_buffers_bytes) };
}
