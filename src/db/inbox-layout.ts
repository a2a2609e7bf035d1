import type { Logger } from '../logging/logger.js';
import type { Queryable, Session } from './types.js';

/**
 * The two batched steps of moving an installation's inbox into the partitioned layout with ingress
 * running (migrations 023 and 024, docs/retention.md "Upgrading"). Each batch is its own transaction,
 * so writers wait on none for longer than one batch, and both steps can be stopped and run again.
 */

/** The version whose file moves the inbox; the ledger must hold every stored id before it is applied. */
export const PARTITIONED_INBOX_VERSION = 24;

/**
 * Days of partitions kept ready beyond today (UTC): a leader that stops for up to this long leaves ingress
 * a partition to write into; past it, a flush creates the missing one itself (src/inbox/group-commit.ts).
 */
export const PARTITIONS_AHEAD_DAYS = 3;

/** Heap pages read per ledger batch: 2,000 pages of 8 kB, about 10,000 to 60,000 rows. */
const LEDGER_PAGES_PER_BATCH = 2000;
/** Rows moved into the history per batch. */
export const HISTORY_ROWS_PER_BATCH = 20_000;

export interface LayoutProgress {
  step: 'ledger' | 'history';
  done: number;
  total: number;
}

export interface LayoutOptions {
  logger?: Logger;
  /** Told after every batch (the CLI prints it on stderr). */
  onProgress?: (progress: LayoutProgress) => void;
}

/**
 * Puts every id of the unpartitioned inbox into the ledger, a range of heap pages at a time (a TID range
 * scan: Postgres 14 and later, PGlite). Migration 023's triggers record every id inserted meanwhile and
 * every row an UPDATE moves to another page, and every other row stays on the page the walk reads, so
 * when the walk ends every id stored before it began is in the ledger.
 */
export async function fillIdLedger(session: Session, options: LayoutOptions = {}): Promise<number> {
  const res = await session.query<{ pages: string }>(
    `SELECT (pg_relation_size(to_regclass('inbox')) / current_setting('block_size')::int)::bigint AS pages`,
  );
  const pages = Number(res.rows[0]?.pages ?? 0);
  let added = 0;
  for (let from = 0; from < pages; from += LEDGER_PAGES_PER_BATCH) {
    const to = Math.min(pages, from + LEDGER_PAGES_PER_BATCH);
    const batch = await session.query(
      `INSERT INTO inbox_ids (event_id, received_at)
       SELECT event_id, received_at FROM inbox WHERE ctid >= $1::tid AND ctid < $2::tid
       ON CONFLICT DO NOTHING`,
      [`(${from},0)`, `(${to},0)`],
    );
    added += batch.rowCount;
    options.onProgress?.({ step: 'ledger', done: to, total: pages });
  }
  options.logger?.info({ pages, added }, 'every stored event id is in the ledger');
  return added;
}

async function unpartitionedLeft(q: Queryable): Promise<number | undefined> {
  const res = await q.query<{ present: boolean; estimate: string | null }>(
    `SELECT to_regclass('inbox_unpartitioned') IS NOT NULL AS present,
            (SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass('inbox_unpartitioned')) AS estimate`,
  );
  const row = res.rows[0];
  return row?.present ? Number(row.estimate ?? 0) : undefined;
}

/**
 * Moves the finished rows migration 024 left in inbox_unpartitioned into the history, oldest first, then
 * drops the empty table. Returns how many rows moved (0 when there was nothing to move).
 */
export async function moveHistory(session: Session, options: LayoutOptions = {}): Promise<number> {
  const estimate = await unpartitionedLeft(session);
  if (estimate === undefined) return 0;
  let moved = 0;
  for (;;) {
    const n = await session.transaction(async (tx) => {
      const res = await tx.query<{ n: number }>('SELECT inbox_unpartitioned_move($1::int) AS n', [HISTORY_ROWS_PER_BATCH]);
      return Number(res.rows[0]?.n ?? 0);
    });
    moved += n;
    options.onProgress?.({ step: 'history', done: moved, total: Math.max(estimate, moved) });
    if (n < HISTORY_ROWS_PER_BATCH) break;
  }
  await session.transaction(async (tx) => {
    // Rows can only arrive here from a writer that bypasses postroom; whatever is left moves now, under the lock DROP takes.
    await tx.exec('LOCK TABLE inbox_unpartitioned IN ACCESS EXCLUSIVE MODE');
    await tx.query('SELECT inbox_unpartitioned_move(2147483647)');
    await tx.exec('DROP TABLE inbox_unpartitioned');
  });
  options.logger?.info({ moved }, 'the inbox history is partitioned; the unpartitioned table is dropped');
  return moved;
}
