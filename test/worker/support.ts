import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../src/db/types.js';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import type { InboxSource, NewInboxEvent } from '../../src/inbox/types.js';

export interface Envelope {
  event_id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

export function envelope(
  type: string,
  data: Record<string, unknown>,
  at: string | Date = new Date(),
  eventId = `evt_${randomUUID()}`,
): Envelope {
  return { event_id: eventId, type, at: typeof at === 'string' ? at : at.toISOString(), data };
}

/** An inbox row as ingress (or the reconciler) would write it for this envelope. */
export function toRow(e: Envelope, source: InboxSource = 'webhook'): NewInboxEvent {
  return inboxRowFromEnvelope(e, source);
}

/** Inserts (and notifies) in one statement, as one group-commit flush would. */
export async function insertEnvelopes(db: Queryable, events: readonly Envelope[]): Promise<void> {
  await insertInboxBatch(
    db,
    events.map((e) => toRow(e)),
  );
}

/**
 * One flush of `n` participant.acted events of one correspondence, ids `${prefix}_000` upward: their
 * rows share received_at (the flush's now()). Returns the ids.
 */
export async function insertFlush(db: Queryable, prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}_${String(i).padStart(3, '0')}`);
  await insertEnvelopes(
    db,
    ids.map((id) => envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-18T10:15:00Z', id)),
  );
  return ids;
}

export interface InboxRow {
  event_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date;
  locked_by: string | null;
}

export async function inboxRow(db: Queryable, eventId: string): Promise<InboxRow> {
  const res = await db.query<InboxRow>(
    'SELECT event_id, status, attempts, last_error, next_attempt_at, locked_by FROM inbox WHERE event_id = $1',
    [eventId],
  );
  if (!res.rows[0]) throw new Error(`no inbox row ${eventId}`);
  return res.rows[0];
}

export async function countByStatus(db: Queryable): Promise<Record<string, number>> {
  const res = await db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM inbox GROUP BY status');
  return Object.fromEntries(res.rows.map((r) => [r.status, Number(r.n)]));
}

/** Makes every waiting event due now (skips the backoff without touching the clock). */
export async function makeDue(db: Queryable): Promise<void> {
  await db.query(`UPDATE inbox SET next_attempt_at = now() WHERE status IN ('received', 'failed')`);
}

/** Polls until fn returns a value other than undefined/false; fails with `what` after the timeout. */
export async function waitFor<T>(fn: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000, intervalMs = 50): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A table handlers write their effects to: one row per event, `n` counts how often it was written. */
export async function createEffectsTable(db: Db | Queryable): Promise<void> {
  await db.exec(`CREATE TABLE IF NOT EXISTS effects (
    event_id text PRIMARY KEY,
    correspondence_id text,
    seq integer,
    n integer NOT NULL DEFAULT 1,
    worker text NOT NULL DEFAULT current_setting('application_name'),
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
  )`);
}

export const EFFECT_SQL = `INSERT INTO effects (event_id, correspondence_id, seq) VALUES ($1, $2, $3)
  ON CONFLICT (event_id) DO UPDATE SET n = effects.n + 1`;

/** What a worker asked of its store, seen through watchStore: each claim and each batch's transaction. */
export interface WatchedStore {
  /** The store to give the worker. */
  db: Db;
  /** When the worker asked for each claim's transaction (under load a connection or BEGIN can keep it waiting). */
  claims: number[];
  /** Each batch whose transaction committed: when it began and ended, how many events it claimed, and whether the claim was full. */
  batches: Array<{ start: number; end: number; size: number; full: boolean }>;
}

const statementName = (sql: unknown): string => (typeof sql === 'object' && sql && 'name' in sql ? String(sql.name) : '');

/**
 * A proxy over the real store that records the worker's claims and batches by the statements it runs (the claim's
 * plan settings, its two steps, the batch's take of its inbox_attempts row), so that a test can tell the worker's
 * rules (a full batch claims again at once; slow events bring more loops in) from a defect.
 */
export function watchStore(target: Db): WatchedStore {
  const claims: number[] = [];
  const batches: WatchedStore['batches'] = [];
  const claimed = new Map<string, { size: number; full: boolean }>();
  const db = new Proxy(target, {
    get(store, key) {
      if (key !== 'transaction') return Reflect.get(store, key, store) as unknown;
      return async <T>(fn: (tx: Queryable) => Promise<T>) => {
        const asked = performance.now();
        let limit = 0;
        let took: string | undefined;
        const result = await store.transaction((tx) =>
          fn(
            new Proxy(tx, {
              get(inner, k) {
                const value = Reflect.get(inner, k, inner) as unknown;
                if (typeof value !== 'function') return value;
                const call = value as (...a: unknown[]) => Promise<unknown>;
                if (k === 'exec')
                  return (sql: string, ...rest: unknown[]) => {
                    if (sql.includes('enable_bitmapscan')) claims.push(asked);
                    return call.call(inner, sql, ...rest);
                  };
                if (k !== 'query') return value;
                return async (sql: unknown, params?: unknown[]) => {
                  const name = statementName(sql);
                  if (name.startsWith('postroom_claim_')) limit = Number(/LIMIT (\d+)\s*\)/.exec((sql as { text: string }).text)![1]);
                  if (name.startsWith('postroom_take_batch_')) took = String(params![0]);
                  const res = (await call.call(inner, sql, params)) as { rows: Array<{ batch_id?: string }> };
                  if (name.startsWith('postroom_claim_') && res.rows.length > 0)
                    claimed.set(res.rows[0]!.batch_id!, { size: res.rows.length, full: res.rows.length >= limit });
                  return res;
                };
              },
            }),
          ),
        );
        if (took !== undefined) {
          // No guess when the claim went unseen: a size of 0 would read as a slow batch and excuse what a test counts.
          const batch = claimed.get(took);
          if (!batch) throw new Error(`watchStore saw batch ${took} taken but not its claim: the worker's statement names changed`);
          batches.push({ start: asked, end: performance.now(), size: batch.size, full: batch.full });
        }
        return result;
      };
    },
  });
  return { db, claims, batches };
}
