import type { Queryable } from '../db/types.js';
import type { InboxDetail, InboxRecord, InboxStatus } from './types.js';

const RECORD_COLUMNS = `event_id, type, status, source, occurred_at, received_at, correspondence_id, endpoint_id,
  attempts, next_attempt_at, last_error, processed_at`;

export interface ListFilter {
  status?: InboxStatus | undefined;
  type?: string | undefined;
  since?: Date | undefined;
  limit: number;
}

/** Newest first; uses inbox_status_received_idx or inbox_received_idx. */
export async function listInbox(q: Queryable, filter: ListFilter): Promise<InboxRecord[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.status) {
    params.push(filter.status);
    where.push(`status = $${params.length}`);
  }
  if (filter.type) {
    params.push(filter.type);
    where.push(`type = $${params.length}`);
  }
  if (filter.since) {
    params.push(filter.since);
    where.push(`received_at >= $${params.length}`);
  }
  params.push(filter.limit);
  const res = await q.query<InboxRecord>(
    `SELECT ${RECORD_COLUMNS} FROM inbox ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY received_at DESC, event_id LIMIT $${params.length}`,
    params,
  );
  return res.rows;
}

export async function getInboxEvent(q: Queryable, eventId: string): Promise<InboxDetail | undefined> {
  const res = await q.query<InboxDetail>(
    `SELECT ${RECORD_COLUMNS}, payload, headers, secret_index, locked_by, locked_until, pruned_at,
            octet_length(raw_body) AS raw_body_bytes
     FROM inbox WHERE event_id = $1`,
    [eventId],
  );
  return res.rows[0];
}

export async function getRawBody(q: Queryable, eventId: string): Promise<Buffer | undefined> {
  const res = await q.query<{ raw_body: Uint8Array | null }>('SELECT raw_body FROM inbox WHERE event_id = $1', [eventId]);
  const raw = res.rows[0]?.raw_body;
  return raw ? Buffer.from(raw) : undefined;
}

export interface StatusCounts {
  byStatus: Record<string, number>;
  oldestUnfinishedAgeSeconds: number;
}

/** Cheap enough for every scrape: a grouped count plus an index-only min(). */
export async function inboxStatusCounts(q: Queryable): Promise<StatusCounts> {
  const counts = await q.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM inbox GROUP BY status');
  const oldest = await q.query<{ age: number | null }>(
    `SELECT extract(epoch FROM now() - min(received_at))::float8 AS age FROM inbox WHERE status IN ('received', 'processing', 'failed')`,
  );
  const byStatus: Record<string, number> = {};
  for (const r of counts.rows) byStatus[r.status] = Number(r.n);
  return { byStatus, oldestUnfinishedAgeSeconds: Math.max(0, Number(oldest.rows[0]?.age ?? 0)) };
}
