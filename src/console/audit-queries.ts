import type { Queryable } from '../db/types.js';
import type { Identity } from './auth/tokens.js';

export const AUDITED_ACTIONS = ['replay_event', 'replay_matching', 'ignore_gap', 'reconcile', 'reveal'] as const;
export type AuditedAction = (typeof AUDITED_ACTIONS)[number];

/** What an action records: what it was, what it was about, how many it changed, and the rest. */
export interface AuditEntry {
  action: AuditedAction;
  target?: string | null;
  affected?: number | null;
  detail?: Record<string, unknown>;
}

/** One action taken in the console, as console_audit keeps it (migration 022). */
export interface ConsoleAuditRow {
  audit_id: number;
  at: Date;
  actor: string;
  role: string;
  via: string;
  action: AuditedAction;
  target: string | null;
  affected: number | null;
  detail: Record<string, unknown>;
  finished_at: Date | null;
}

const COLUMNS = 'audit_id::int AS audit_id, at, actor, role, via, action, target, affected, detail, finished_at';

/** The audit entry of one event's replay, whether the console or the CLI asked for it. */
export function replayEventEntry(
  eventId: string,
  result: { outcome: 'replayed'; from_status: string } | { outcome: 'still_invalid'; reason: string },
): AuditEntry {
  return {
    action: 'replay_event',
    target: eventId,
    affected: result.outcome === 'replayed' ? 1 : 0,
    detail:
      result.outcome === 'replayed'
        ? { outcome: 'replayed', from_status: result.from_status }
        : { outcome: 'still_invalid', reason: result.reason },
  };
}

/** Records an action; returns its id (an action that runs on records how it ended with finishAudit). */
export async function recordAudit(q: Queryable, who: Identity, entry: AuditEntry): Promise<number> {
  const res = await q.query<{ audit_id: number }>(
    `INSERT INTO console_audit (actor, role, via, action, target, affected, detail)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING audit_id::int AS audit_id`,
    [who.name, who.role, who.via, entry.action, entry.target ?? null, entry.affected ?? null, JSON.stringify(entry.detail ?? {})],
  );
  return Number(res.rows[0]!.audit_id);
}

/** How an action that ran on (a reconcile run) ended: its count and what it reported, merged into its detail. */
export async function finishAudit(q: Queryable, auditId: number, affected: number | null, detail: Record<string, unknown>): Promise<void> {
  await q.query(
    `UPDATE console_audit SET finished_at = now(), affected = coalesce($2, affected), detail = detail || $3::jsonb WHERE audit_id = $1`,
    [auditId, affected, JSON.stringify(detail)],
  );
}

/** Newest first, older than entry `before` when given (the primary key: a page costs the same at any age). */
export async function listAudit(
  q: Queryable,
  options: { before?: number | undefined; since?: Date | undefined; actor?: string | undefined; limit: number },
): Promise<ConsoleAuditRow[]> {
  const params: unknown[] = [options.limit];
  const where: string[] = [];
  if (options.before !== undefined) where.push(`a.audit_id < $${params.push(options.before)}`);
  if (options.since !== undefined) where.push(`a.at >= $${params.push(options.since)}`);
  if (options.actor !== undefined) where.push(`a.actor = $${params.push(options.actor)}`);
  const res = await q.query<ConsoleAuditRow>(
    // Ordered by the table's audit_id (the primary key), not the int selected under that name.
    `SELECT ${COLUMNS} FROM console_audit a ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY a.audit_id DESC LIMIT $1`,
    params,
  );
  return res.rows;
}
