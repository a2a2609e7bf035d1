import type { Queryable } from '../db/types.js';
import type { ReconcileSummary } from './types.js';

export { countOpenGaps } from './gap-queries.js';
export { lastSuccessfulRun } from './state-queries.js';

/** The summary key the reconciler writes the at-risk count under; typed so the gauge cannot read another. */
const AT_RISK = 'at_risk' satisfies keyof ReconcileSummary;

/** Pending deliveries the last finished run found older than its threshold. */
export async function countAtRiskFromLastRun(q: Queryable): Promise<number> {
  const res = await q.query<{ n: number | null }>(
    `SELECT (summary -> '${AT_RISK}' ->> 'count')::int AS n FROM reconcile_runs WHERE outcome IN ('clean', 'gaps_open') AND NOT dry_run ORDER BY finished_at DESC LIMIT 1`,
  );
  return Number(res.rows[0]?.n ?? 0);
}
