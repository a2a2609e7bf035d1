import { sqlText } from '../../src/db/statement.js';
import type { Db, Queryable } from '../../src/db/types.js';

/** One node of `EXPLAIN (FORMAT JSON)`, as far as the plan checks read it. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  /** Set on the plan of a CTE or subquery: `CTE <name>`, `SubPlan n`. */
  'Subplan Name'?: string;
  Plans?: PlanNode[];
}

/** The plan of one statement (Postgres returns the JSON parsed, PGlite as text). */
export async function explain(q: Queryable, sql: string, params?: readonly unknown[]): Promise<PlanNode> {
  const res = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const raw = res.rows[0]!['QUERY PLAN'];
  return ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0]!.Plan;
}

/**
 * Reads of inbox not driven by a key: a sequential scan, or a walk with no
 * condition of an index that `flagged` names (the others are allowed to be walked).
 */
export function unkeyedInboxReads(node: PlanNode, flagged: (index: string) => boolean, out: string[] = []): string[] {
  if (node['Relation Name'] === 'inbox' && node['Node Type'] === 'Seq Scan') out.push('Seq Scan on inbox');
  const index = node['Index Name'];
  if (index !== undefined && !node['Index Cond'] && flagged(index)) out.push(`${node['Node Type']} on ${index} without a condition`);
  for (const child of node.Plans ?? []) unkeyedInboxReads(child, flagged, out);
  return out;
}

/** Records every statement a function sends, so its plans can be inspected. */
export function recording(db: Db): { q: Queryable; sql: string[] } {
  const sql: string[] = [];
  const q: Queryable = {
    query: (text, params) => {
      sql.push(sqlText(text));
      return db.query(text, params);
    },
    exec: (text) => {
      sql.push(text);
      return db.exec(text);
    },
  } as Queryable;
  return { q, sql };
}
