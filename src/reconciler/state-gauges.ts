import type { Queryable } from '../db/types.js';

export { countOpenGaps } from './gap-queries.js';
export { lastSuccessfulRun } from './state-queries.js';

/** Pending deliveries the last finished run found older than its threshold (`atRisk` in summaries older versions recorded). */
export async function countAtRiskFromLastRun(q: Queryable): Promise<number> {
  const res = await q.query<{ n: number | null }>(
    `SELECT COALESCE(summary -> 'at_risk' ->> 'count', summary -> 'atRisk' ->> 'count')::int AS n FROM reconcile_runs WHERE outcome IN ('clean', 'gaps_open') AND NOT dry_run ORDER BY finished_at DESC LIMIT 1`,
  );
  return Number(res.rows[0]?.n ?? 0);
}
