import type { Queryable } from '../db/types.js';

export interface Watermark {
  watermark: Date | null;
  resumeCursor: string | null;
  resumeMaxSeen: Date | null;
}

export async function getWatermark(q: Queryable, endpointId: string, status: string): Promise<Watermark> {
  const res = await q.query<{ watermark: Date | null; resume_cursor: string | null; resume_max_seen: Date | null }>(
    'SELECT watermark, resume_cursor, resume_max_seen FROM reconcile_watermarks WHERE endpoint_id = $1 AND delivery_status = $2',
    [endpointId, status],
  );
  const r = res.rows[0];
  return { watermark: r?.watermark ?? null, resumeCursor: r?.resume_cursor ?? null, resumeMaxSeen: r?.resume_max_seen ?? null };
}

/** After each page: where to pick up if this run dies. */
export async function saveResumePoint(
  q: Queryable,
  endpointId: string,
  status: string,
  cursor: string | null,
  maxSeen: Date | null,
): Promise<void> {
  await q.query(
    `INSERT INTO reconcile_watermarks (endpoint_id, delivery_status, resume_cursor, resume_max_seen)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (endpoint_id, delivery_status) DO UPDATE SET resume_cursor = $3, resume_max_seen = $4, updated_at = now()`,
    [endpointId, status, cursor, maxSeen],
  );
}

/** A complete walk: the watermark advances (never back) and the resume point is cleared. */
export async function completeWalk(q: Queryable, endpointId: string, status: string, maxSeen: Date | null): Promise<void> {
  await q.query(
    `INSERT INTO reconcile_watermarks (endpoint_id, delivery_status, watermark)
     VALUES ($1, $2, $3)
     ON CONFLICT (endpoint_id, delivery_status) DO UPDATE
       SET watermark = GREATEST(reconcile_watermarks.watermark, EXCLUDED.watermark), resume_cursor = NULL, resume_max_seen = NULL, updated_at = now()`,
    [endpointId, status, maxSeen],
  );
}

/** Called only by the lock holder: any other run still marked running was killed. */
export async function startRun(q: Queryable, dryRun: boolean, holder: string): Promise<number> {
  // A run that never finished (killed) is marked so, not left "running" forever.
  await q.query(`UPDATE reconcile_runs SET outcome = 'interrupted', finished_at = now() WHERE outcome = 'running'`);
  const res = await q.query<{ run_id: number }>(
    'INSERT INTO reconcile_runs (dry_run, holder) VALUES ($1, $2) RETURNING run_id::int AS run_id',
    [dryRun, holder],
  );
  return Number(res.rows[0]!.run_id);
}

export interface LockHolder {
  run_id: number;
  holder: string | null;
  started_at: Date;
}

/** The run in progress (the replica holding the reconcile lock), when it recorded itself. */
export async function currentRun(q: Queryable): Promise<LockHolder | undefined> {
  const res = await q.query<LockHolder>(
    `SELECT run_id::int AS run_id, holder, started_at FROM reconcile_runs WHERE outcome = 'running' ORDER BY run_id DESC LIMIT 1`,
  );
  return res.rows[0];
}

export async function getListingWatermark(q: Queryable, plane: string): Promise<Date | null> {
  const res = await q.query<{ watermark: Date | null }>('SELECT watermark FROM reconcile_listing_state WHERE plane = $1', [plane]);
  return res.rows[0]?.watermark ?? null;
}

/** After a complete walk of the listing: the watermark advances, never back. */
export async function saveListingWatermark(q: Queryable, plane: string, watermark: Date): Promise<void> {
  await q.query(
    `INSERT INTO reconcile_listing_state (plane, watermark) VALUES ($1, $2)
     ON CONFLICT (plane) DO UPDATE SET watermark = GREATEST(reconcile_listing_state.watermark, EXCLUDED.watermark), updated_at = now()`,
    [plane, watermark],
  );
}

export async function finishRun(q: Queryable, runId: number, outcome: string, summary: unknown, error?: string): Promise<void> {
  await q.query('UPDATE reconcile_runs SET finished_at = now(), outcome = $2, summary = $3::jsonb, error = $4 WHERE run_id = $1', [
    runId,
    outcome,
    JSON.stringify(summary),
    error ?? null,
  ]);
}

export async function lastSuccessfulRun(q: Queryable): Promise<Date | undefined> {
  const res = await q.query<{ finished_at: Date }>(
    `SELECT finished_at FROM reconcile_runs WHERE outcome IN ('clean', 'gaps_open') AND NOT dry_run ORDER BY finished_at DESC LIMIT 1`,
  );
  return res.rows[0]?.finished_at;
}

/**
 * Endpoints postroom has stored (created or rotated through it), not deleted; with a plane, only that plane's
 * and those stored without one (a key of one plane cannot see the other plane's deliveries).
 */
export async function knownEndpointIds(q: Queryable, plane?: string): Promise<string[]> {
  const res = await q.query<{ endpoint_id: string }>(
    'SELECT endpoint_id FROM webhook_endpoints WHERE deleted_at IS NULL AND ($1::text IS NULL OR plane IS NULL OR plane = $1) ORDER BY endpoint_id',
    [plane ?? null],
  );
  return res.rows.map((r) => r.endpoint_id);
}

/** A client hook recording what was sent: `createApiClient({ …, onCorrespondenceCreated: sentLedger(db) })`. */
export function sentLedger(q: Queryable): (created: { correspondence_id: string }) => Promise<void> {
  return (created) => recordSentCorrespondence(q, [created.correspondence_id]);
}

export async function recordSentCorrespondence(q: Queryable, ids: readonly string[], source = 'client'): Promise<void> {
  if (ids.length === 0) return;
  await q.query('INSERT INTO sent_correspondence (correspondence_id, source) SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING', [
    ids,
    source,
  ]);
}

export async function eventIdsInInbox(q: Queryable, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const res = await q.query<{ event_id: string }>('SELECT event_id FROM inbox_ids WHERE event_id = ANY($1::text[])', [ids]);
  return new Set(res.rows.map((r) => r.event_id));
}

/** A reconcile run as listings show it. */
export interface RunRecord {
  run_id: number;
  started_at: Date;
  finished_at: Date | null;
  outcome: 'running' | 'clean' | 'gaps_open' | 'failed' | 'interrupted';
  dry_run: boolean;
  holder: string | null;
  summary: Record<string, unknown> | null;
  error: string | null;
}

const RUN_COLUMNS = 'run_id::int AS run_id, started_at, finished_at, outcome, dry_run, holder, summary, error';

/** Runs newest first, older than run `before` when given (the primary key: a page costs the same at any age). */
export async function listRuns(q: Queryable, options: { before?: number | undefined; limit: number }): Promise<RunRecord[]> {
  const res = await q.query<RunRecord>(
    // Ordered by the table's run_id, not the int selected under that name: the primary key serves only the column.
    `SELECT ${RUN_COLUMNS} FROM reconcile_runs r WHERE ($1::bigint IS NULL OR r.run_id < $1) ORDER BY r.run_id DESC LIMIT $2`,
    [options.before ?? null, options.limit],
  );
  return res.rows;
}

export async function getRun(q: Queryable, runId: number): Promise<RunRecord | undefined> {
  const res = await q.query<RunRecord>(`SELECT ${RUN_COLUMNS} FROM reconcile_runs WHERE run_id = $1`, [runId]);
  return res.rows[0];
}

/** How far the reconciler's walk of each endpoint's delivery list got (one row per endpoint and delivery status). */
export async function walkWatermarks(
  q: Queryable,
): Promise<Array<{ endpoint_id: string; delivery_status: string; watermark: Date | null; resuming: boolean; updated_at: Date }>> {
  const res = await q.query<{ endpoint_id: string; delivery_status: string; watermark: Date | null; resuming: boolean; updated_at: Date }>(
    `SELECT endpoint_id, delivery_status, watermark, resume_cursor IS NOT NULL AS resuming, updated_at
     FROM reconcile_watermarks ORDER BY endpoint_id, delivery_status LIMIT 200`,
  );
  return res.rows;
}
