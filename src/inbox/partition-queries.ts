import type { Queryable } from '../db/types.js';

/**
 * The inbox's partitions (migration 024): one per UTC day, named inbox_pYYYYMMDD. Catalogue reads and one
 * probe of a partial index per partition; nothing here reads a partition's rows.
 */

export interface InboxPartition {
  name: string;
  /** The UTC day it holds, YYYY-MM-DD. */
  day: string;
  /** Its table and indexes, from the catalogue. */
  bytes: number;
  /** Postgres's estimate of its rows (reltuples), -1 when never analysed. */
  estimatedRows: number;
}

const NAME = /^inbox_p(\d{4})(\d{2})(\d{2})$/;

export async function listInboxPartitions(q: Queryable): Promise<InboxPartition[]> {
  const res = await q.query<{ name: string; bytes: string; estimate: string }>(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS bytes, c.reltuples::bigint AS estimate
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = to_regclass('inbox') ORDER BY c.relname`,
  );
  const out: InboxPartition[] = [];
  for (const r of res.rows) {
    const m = NAME.exec(r.name);
    if (!m) continue;
    out.push({ name: r.name, day: `${m[1]}-${m[2]}-${m[3]}`, bytes: Number(r.bytes), estimatedRows: Number(r.estimate) });
  }
  return out;
}

/**
 * How many of a partition's events need work or attention, by status: each status through the partial
 * index that lists it (inbox_unfinished_idx, inbox_attention_idx), so a partition of finished events
 * costs two empty index probes.
 */
export async function eventsNeedingWork(q: Queryable, partition: string): Promise<Record<string, number>> {
  const table = quoteIdent(partition);
  const res = await q.query<{ status: string; n: string }>(
    `SELECT status, count(*)::bigint AS n FROM ${table} WHERE status IN ('received', 'processing', 'failed') GROUP BY status
     UNION ALL
     SELECT status, count(*)::bigint FROM ${table} WHERE status IN ('dead', 'quarantined') GROUP BY status`,
  );
  const out: Record<string, number> = {};
  for (const r of res.rows) out[r.status] = (out[r.status] ?? 0) + Number(r.n);
  return out;
}

/**
 * Detaches and drops one partition in one transaction. The partition is locked against writes first and
 * checked again (a replay could have re-queued one of its events since the first check): a partition with
 * an event needing work is left as it is, and the statuses that kept it come back; undefined once dropped.
 * DETACH and DROP wait at most lockTimeoutMs for the inbox's lock (a flush holds it for milliseconds).
 */
export async function dropInboxPartition(
  tx: Queryable,
  partition: string,
  lockTimeoutMs: number,
): Promise<Record<string, number> | undefined> {
  await tx.query(`SELECT set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
  await tx.exec(`LOCK TABLE ${quoteIdent(partition)} IN SHARE ROW EXCLUSIVE MODE`);
  const needing = await eventsNeedingWork(tx, partition);
  if (Object.keys(needing).length > 0) return needing;
  await tx.exec(`ALTER TABLE inbox DETACH PARTITION ${quoteIdent(partition)}`);
  await tx.exec(`DROP TABLE ${quoteIdent(partition)}`);
  return undefined;
}

/** The number of heap pages of a partition: the archive reads it a range of pages at a time. */
export async function partitionPages(q: Queryable, partition: string): Promise<number> {
  const res = await q.query<{ pages: string }>(
    `SELECT (pg_relation_size(to_regclass($1)) / current_setting('block_size')::int)::bigint AS pages`,
    [partition],
  );
  return Number(res.rows[0]?.pages ?? 0);
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
