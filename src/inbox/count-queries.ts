import type { Queryable } from '../db/types.js';

/**
 * Counting the inbox without reading it: the statuses a row passes through or
 * stops in for attention are bounded sets that partial indexes hold
 * (inbox_unfinished_idx, inbox_attention_idx), and finished events, nearly every
 * row, are read from inbox_tally (migration 007). Cost follows the backlog and
 * the dead letters, not the number of events ever received.
 */
const BY_TYPE_AND_STATUS_SQL = `
SELECT type, status, count(*)::bigint AS n FROM inbox WHERE status IN ('received', 'processing', 'failed') GROUP BY type, status
UNION ALL
SELECT type, status, count(*)::bigint FROM inbox WHERE status IN ('dead', 'quarantined') GROUP BY type, status
UNION ALL
SELECT type, status, sum(n)::bigint FROM inbox_tally GROUP BY type, status HAVING sum(n) <> 0`;

const BY_STATUS_SQL = `
SELECT status, count(*)::bigint AS n FROM inbox WHERE status IN ('received', 'processing', 'failed') GROUP BY status
UNION ALL
SELECT status, count(*)::bigint FROM inbox WHERE status IN ('dead', 'quarantined') GROUP BY status
UNION ALL
SELECT status, sum(n)::bigint FROM inbox_tally GROUP BY status`;

/** inbox_unfinished_idx: the first entry is the answer. */
const OLDEST_UNFINISHED_SQL = `
SELECT event_id, received_at, extract(epoch FROM now() - received_at)::float8 AS age
FROM inbox WHERE status IN ('received', 'processing', 'failed') ORDER BY received_at LIMIT 1`;

export interface StatusCounts {
  byStatus: Record<string, number>;
  oldestUnfinishedAgeSeconds: number;
}

/** For every scrape: two index-bounded counts, a read of inbox_tally, and one index probe. */
export async function inboxStatusCounts(q: Queryable): Promise<StatusCounts> {
  const counts = await q.query<{ status: string; n: string | number }>(BY_STATUS_SQL);
  const oldest = await q.query<{ age: number | null }>(OLDEST_UNFINISHED_SQL);
  const byStatus: Record<string, number> = {};
  for (const r of counts.rows) byStatus[r.status] = (byStatus[r.status] ?? 0) + Number(r.n);
  return { byStatus, oldestUnfinishedAgeSeconds: Math.max(0, Number(oldest.rows[0]?.age ?? 0)) };
}

export interface InboxStats {
  byStatus: Record<string, number>;
  byType: Record<string, Record<string, number>>;
  total: number;
  /** The oldest event still received, processing or failed; null when there is none. */
  oldestUnprocessed: { eventId: string; receivedAt: string; ageSeconds: number } | null;
}

export async function inboxStats(q: Queryable): Promise<InboxStats> {
  const counts = await q.query<{ type: string; status: string; n: string | number }>(BY_TYPE_AND_STATUS_SQL);
  const oldest = await q.query<{ event_id: string; received_at: Date; age: number }>(OLDEST_UNFINISHED_SQL);
  const stats: InboxStats = { byStatus: {}, byType: {}, total: 0, oldestUnprocessed: null };
  const rows = [...counts.rows].sort((a, b) => (a.type === b.type ? (a.status < b.status ? -1 : 1) : a.type < b.type ? -1 : 1));
  for (const r of rows) {
    const n = Number(r.n);
    stats.byStatus[r.status] = (stats.byStatus[r.status] ?? 0) + n;
    const byType = (stats.byType[r.type] ??= {});
    byType[r.status] = (byType[r.status] ?? 0) + n;
    stats.total += n;
  }
  const o = oldest.rows[0];
  if (o) stats.oldestUnprocessed = { eventId: o.event_id, receivedAt: new Date(o.received_at).toISOString(), ageSeconds: Math.max(0, Number(o.age)) };
  return stats;
}
