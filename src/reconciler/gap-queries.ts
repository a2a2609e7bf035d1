import type { Queryable } from '../db/types.js';

export const GAP_STATUSES = ['open', 'recovered', 'state_synced', 'not_consumed', 'ignored'] as const;
export type GapStatus = (typeof GAP_STATUSES)[number];

export interface Gap {
  gap_id: number;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  delivery_id: string;
  delivery_created_at: Date | null;
  last_error: string;
  correspondence_id: string | null;
  status: GapStatus;
  reason: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  resolved_at: Date | null;
  /** Why it left `open`: the correspondence re-read, when, what differed, what was written. */
  evidence: Record<string, unknown> | null;
}

export interface NewGap {
  eventId: string;
  eventType: string;
  endpointId: string;
  deliveryId: string;
  deliveryCreatedAt: string | null;
  lastError: string;
  correspondenceId: string | null;
  reason: string | null;
  /** The plane of the key whose walk found it (null when unknown). */
  plane?: string | null;
}

/**
 * Which open gaps a run's evidence may touch: those its own plane's key found, and those recorded without a
 * plane whose endpoint the run walked. A database may serve both planes; a re-read with one plane's key says
 * nothing about the other plane's events.
 */
export interface GapScope {
  plane: string;
  endpoints: readonly string[];
}

/** The SQL condition for a scope, with its two parameters numbered from `first`; TRUE without a scope. */
function scopeCondition(scope: GapScope | undefined, first: number): { sql: string; params: unknown[] } {
  if (!scope) return { sql: 'TRUE', params: [] };
  return {
    sql: `(plane = $${first} OR (plane IS NULL AND endpoint_id = ANY($${first + 1}::text[])))`,
    params: [scope.plane, [...scope.endpoints]],
  };
}

const GAP_COLUMNS = `gap_id::int AS gap_id, event_id, event_type, endpoint_id, delivery_id, delivery_created_at, last_error,
  correspondence_id, status, reason, first_seen_at, last_seen_at, resolved_at, evidence`;

/** Records gaps; a gap seen again only has last_seen_at bumped. Returns how many were new. */
export async function upsertGaps(q: Queryable, gaps: readonly NewGap[]): Promise<number> {
  if (gaps.length === 0) return 0;
  const res = await q.query<{ inserted: boolean }>(
    `INSERT INTO reconcile_gaps (event_id, event_type, endpoint_id, delivery_id, delivery_created_at, last_error, correspondence_id, reason, plane)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[], $8::text[], $9::text[])
     ON CONFLICT (event_id) DO UPDATE SET last_seen_at = now(),
       correspondence_id = COALESCE(reconcile_gaps.correspondence_id, EXCLUDED.correspondence_id),
       plane = COALESCE(reconcile_gaps.plane, EXCLUDED.plane)
     RETURNING (xmax = 0) AS inserted`,
    [
      gaps.map((g) => g.eventId),
      gaps.map((g) => g.eventType),
      gaps.map((g) => g.endpointId),
      gaps.map((g) => g.deliveryId),
      gaps.map((g) => g.deliveryCreatedAt),
      gaps.map((g) => g.lastError),
      gaps.map((g) => g.correspondenceId),
      gaps.map((g) => g.reason),
      gaps.map((g) => g.plane ?? null),
    ],
  );
  return res.rows.filter((r) => r.inserted).length;
}

/**
 * Open gaps whose event has since reached the inbox (a redelivery, a replay): the ledger holds its id, written in
 * the transaction that stored the event. Joined through the ledger's hash index, not the inbox: the inbox's id
 * indexes are per day, and a join on the id alone read every partition whole (1.4 s at 2M events, growing with
 * the history). The source is read from the one partition the ledger's instant names, pruned at run time; it is
 * null when retention has since dropped that day.
 */
export async function recoverGapsReceivedLater(q: Queryable, runId: number | null): Promise<number> {
  const res = await q.query(
    `UPDATE reconcile_gaps g SET status = 'recovered', resolved_at = now(), reason = 'the event itself reached the inbox after the gap was found',
       evidence = jsonb_build_object('kind', 'event_received', 'event_id', g.event_id,
         'source', (SELECT i.source FROM inbox i WHERE i.event_id = l.event_id AND i.received_at = l.received_at),
         'received_at', l.received_at, 'run_id', $1::bigint)
     FROM inbox_ids l
     WHERE g.status = 'open' AND l.event_id = g.event_id`,
    [runId],
  );
  return res.rowCount;
}

/** The earliest delivery among open gaps of these types (where a re-read must start), and the correspondence ids deliveries named. */
export async function openGapOutline(
  q: Queryable,
  types: readonly string[],
  scope?: GapScope,
): Promise<{ earliestDelivery: Date | null; correspondenceIds: string[] }> {
  const inScope = scopeCondition(scope, 2);
  const first = await q.query<{ earliest: Date | null }>(
    `SELECT min(delivery_created_at) AS earliest FROM reconcile_gaps WHERE status = 'open' AND event_type = ANY($1::text[]) AND ${inScope.sql}`,
    [types, ...inScope.params],
  );
  const ids = await q.query<{ correspondence_id: string }>(
    `SELECT DISTINCT correspondence_id FROM reconcile_gaps
     WHERE status = 'open' AND correspondence_id IS NOT NULL AND event_type = ANY($1::text[]) AND ${inScope.sql}`,
    [types, ...inScope.params],
  );
  return { earliestDelivery: first.rows[0]?.earliest ?? null, correspondenceIds: ids.rows.map((r) => r.correspondence_id) };
}

/** Open gaps of these types first seen before `seenBefore`, as the matcher needs them. */
export async function openGapsToMatch(
  q: Queryable,
  types: readonly string[],
  seenBefore: Date,
  scope?: GapScope,
): Promise<Array<{ gap_id: number; event_type: string; delivery_created_at: Date | null; correspondence_id: string | null }>> {
  const inScope = scopeCondition(scope, 3);
  const res = await q.query<{ gap_id: number; event_type: string; delivery_created_at: Date | null; correspondence_id: string | null }>(
    `SELECT gap_id::int AS gap_id, event_type, delivery_created_at, correspondence_id FROM reconcile_gaps
     WHERE status = 'open' AND event_type = ANY($1::text[]) AND first_seen_at <= $2 AND ${inScope.sql} ORDER BY gap_id`,
    [types, seenBefore, ...inScope.params],
  );
  return res.rows;
}

/**
 * Closes one gap with the evidence that explains it, and uses up a single
 * explanation, in one transaction: neither happens without the other. Run it
 * in a transaction: when the gap turns out not to be open any more, the
 * explanation is handed back, so it still counts for another gap.
 */
export async function closeGapWithEvidence(
  q: Queryable,
  p: {
    gapId: number;
    status: 'recovered' | 'state_synced';
    reason: string;
    evidence: Record<string, unknown>;
    explanationId: string;
    single: boolean;
  },
): Promise<boolean> {
  if (p.single) {
    const used = await q.query(`UPDATE reconcile_explanations SET used_by_gap = $2 WHERE explanation_id = $1 AND used_by_gap IS NULL`, [
      p.explanationId,
      p.gapId,
    ]);
    if (used.rowCount === 0) return false;
  }
  const res = await q.query(
    `UPDATE reconcile_gaps SET status = $2, resolved_at = now(), reason = $3, evidence = $4::jsonb WHERE gap_id = $1 AND status = 'open'`,
    [p.gapId, p.status, p.reason, JSON.stringify(p.evidence)],
  );
  if (res.rowCount === 1) return true;
  if (p.single) {
    await q.query(`UPDATE reconcile_explanations SET used_by_gap = NULL WHERE explanation_id = $1 AND used_by_gap = $2`, [
      p.explanationId,
      p.gapId,
    ]);
  }
  return false;
}

/** The event types among open gaps (to decide which nothing consumes). */
export async function openGapTypes(q: Queryable): Promise<string[]> {
  const res = await q.query<{ event_type: string }>(`SELECT DISTINCT event_type FROM reconcile_gaps WHERE status = 'open'`);
  return res.rows.map((r) => r.event_type);
}

/** Closes open gaps of types nothing consumes: no handler, no forwarder, no projection effect. */
export async function closeNotConsumed(q: Queryable, types: readonly string[], runId: number | null): Promise<number> {
  if (types.length === 0) return 0;
  const res = await q.query(
    `UPDATE reconcile_gaps SET status = 'not_consumed', resolved_at = now(),
       reason = 'nothing consumes ' || event_type || ': no handler, no forwarder and no projection effect (set POSTROOM_RECONCILE_CONSUMED_TYPES to keep such gaps open)',
       evidence = jsonb_build_object('kind', 'not_consumed', 'run_id', $2::bigint)
     WHERE status = 'open' AND event_type = ANY($1::text[])`,
    [types, runId],
  );
  return res.rowCount;
}

/** Says why open gaps of these types are still open (without touching ones already saying it). */
export async function explainOpenGaps(
  q: Queryable,
  types: readonly string[],
  reason: string,
  gapIds?: readonly number[],
  scope?: GapScope,
): Promise<void> {
  const inScope = scopeCondition(scope, 4);
  await q.query(
    `UPDATE reconcile_gaps SET reason = $2 WHERE status = 'open' AND event_type = ANY($1::text[]) AND reason IS DISTINCT FROM $2
       AND ($3::bigint[] IS NULL OR gap_id = ANY($3::bigint[])) AND ${inScope.sql}`,
    [types, reason, gapIds ?? null, ...inScope.params],
  );
}

export async function countOpenGaps(q: Queryable): Promise<number> {
  const res = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM reconcile_gaps WHERE status = 'open'`);
  return Number(res.rows[0]?.n ?? 0);
}

export async function listGaps(q: Queryable, filter: { status?: GapStatus | undefined; limit: number }): Promise<Gap[]> {
  const res = await q.query<Gap>(
    `SELECT ${GAP_COLUMNS} FROM reconcile_gaps ${filter.status ? 'WHERE status = $2' : ''} ORDER BY first_seen_at DESC, gap_id DESC LIMIT $1`,
    filter.status ? [filter.limit, filter.status] : [filter.limit],
  );
  return res.rows;
}

/** By gap id or by event id, whichever the on-call engineer has at hand. */
export async function getGap(q: Queryable, idOrEventId: string): Promise<Gap | undefined> {
  const byId = /^\d{1,18}$/.test(idOrEventId);
  const res = await q.query<Gap>(`SELECT ${GAP_COLUMNS} FROM reconcile_gaps WHERE ${byId ? 'gap_id = $1::bigint' : 'event_id = $1'}`, [
    idOrEventId,
  ]);
  return res.rows[0];
}

export async function ignoreGap(q: Queryable, gapId: number, reason: string): Promise<Gap | undefined> {
  const res = await q.query<Gap>(
    `UPDATE reconcile_gaps SET status = 'ignored', resolved_at = now(), reason = $2 WHERE gap_id = $1 AND status = 'open' RETURNING ${GAP_COLUMNS}`,
    [gapId, reason],
  );
  return res.rows[0];
}

/** Gaps newest first (by id), of one status when given, older than gap `before`: a page costs the same at any age. */
export async function pageGaps(
  q: Queryable,
  filter: { status?: GapStatus | undefined; before?: number | undefined; limit: number },
): Promise<Gap[]> {
  const params: unknown[] = [filter.limit];
  const where: string[] = [];
  if (filter.status) where.push(`status = $${params.push(filter.status)}`);
  if (filter.before !== undefined) where.push(`gap_id < $${params.push(filter.before)}`);
  // With a status, reconcile_gaps_status_id_idx walked backwards; without, the primary key.
  const res = await q.query<Gap>(
    // Ordered by the table's gap_id, not the int the list selects under that name: the index serves only the column.
    `SELECT ${GAP_COLUMNS} FROM reconcile_gaps g ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY ${filter.status ? 'g.status DESC, ' : ''}g.gap_id DESC LIMIT $1`,
    params,
  );
  return res.rows;
}

/** The gaps whose delivery named this correspondence (reconcile_gaps_correspondence_idx). */
export async function gapsOfCorrespondence(q: Queryable, correspondenceId: string, limit: number): Promise<Gap[]> {
  const res = await q.query<Gap>(`SELECT ${GAP_COLUMNS} FROM reconcile_gaps WHERE correspondence_id = $1 ORDER BY gap_id DESC LIMIT $2`, [
    correspondenceId,
    limit,
  ]);
  return res.rows;
}

/** The gap recorded for an event id (its unique index), whatever the id looks like. */
export async function gapOfEvent(q: Queryable, eventId: string): Promise<Gap | undefined> {
  const res = await q.query<Gap>(`SELECT ${GAP_COLUMNS} FROM reconcile_gaps WHERE event_id = $1`, [eventId]);
  return res.rows[0];
}
