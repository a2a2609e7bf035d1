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

/**
 * The plan of one statement (Postgres returns the JSON parsed, PGlite as text), read as if every
 * partitioned table were one: a partition and its indexes take their parent's names, and an Append or
 * Merge Append whose children do the same thing to partitions of one table shows as that one child. The
 * checks ask which index a statement walks, not how many days the inbox has.
 */
export async function explain(q: Queryable, sql: string, params?: readonly unknown[]): Promise<PlanNode> {
  const res = await q.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const raw = res.rows[0]!['QUERY PLAN'];
  const plan = ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0]!.Plan;
  return asOneTablePlan(q, plan);
}

/** A plan read as if every partitioned table were one (see explain). */
export async function asOneTablePlan(q: Queryable, plan: PlanNode): Promise<PlanNode> {
  const parents = await q.query<{ child: string; parent: string; empty: boolean }>(
    `SELECT c.relname AS child, p.relname AS parent, c.relkind = 'r' AND pg_relation_size(c.oid) = 0 AS empty FROM pg_inherits i
     JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
     WHERE p.relnamespace = current_schema()::regnamespace`,
  );
  const parentOf = new Map(parents.rows.map((r) => [r.child, r.parent]));
  const empty = new Set(parents.rows.filter((r) => r.empty).map((r) => r.child));
  return asOneTable(plan, parentOf, empty);
}

/**
 * A partition with no pages at all (the days ahead) is read by a sequential scan of nothing: the planner's
 * choice for an empty table, which costs nothing and says nothing about the statement's keys.
 */
function asOneTable(node: PlanNode, parentOf: Map<string, string>, empty: Set<string>): PlanNode {
  const out: PlanNode = { ...node };
  for (const key of ['Relation Name', 'Index Name'] as const) {
    const name = out[key];
    if (name !== undefined && parentOf.has(name)) out[key] = parentOf.get(name)!;
  }
  const appending = node['Node Type'] === 'Append' || node['Node Type'] === 'Merge Append';
  // The subplans Postgres hangs under the first child of an Append move to the first child kept.
  const carried: PlanNode[] = [];
  let children = node.Plans?.filter((child) => {
    const nothing =
      appending &&
      child['Node Type'] === 'Seq Scan' &&
      empty.has(child['Relation Name'] ?? '') &&
      (child.Plans ?? []).every((p) => p['Subplan Name']);
    if (nothing) carried.push(...(child.Plans ?? []));
    return !nothing;
  }).map((child) => asOneTable(child, parentOf, empty));
  if (children?.length && carried.length) {
    children[0] = { ...children[0]!, Plans: [...carried.map((c) => asOneTable(c, parentOf, empty)), ...(children[0]!.Plans ?? [])] };
  }
  if (children && (node['Node Type'] === 'Append' || node['Node Type'] === 'Merge Append') && children.length > 0) {
    // Subplans (a correlated check) hang under the first child only: they are not what makes children differ.
    const shape = (n: PlanNode): string =>
      JSON.stringify([n['Node Type'], n['Relation Name'], n['Index Name'], (n.Plans ?? []).filter((p) => !p['Subplan Name']).length]);
    if (children.every((c) => shape(c) === shape(children![0]!))) children = [children[0]!];
  }
  if (children) out.Plans = children;
  if (children?.length === 1 && (node['Node Type'] === 'Append' || node['Node Type'] === 'Merge Append')) {
    return { ...children[0]!, ...(node['Subplan Name'] ? { 'Subplan Name': node['Subplan Name'] } : {}) };
  }
  return out;
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

/** One statement a function sent, with its parameters (undefined for a plain `exec`: a setting, say). */
export interface SentStatement {
  sql: string;
  params?: readonly unknown[];
}

class RolledBack extends Error {}

/** Runs fn in a transaction that is always rolled back, and returns what it returned. */
export async function rolledBack<T>(db: Db, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let value: T | undefined;
  await db
    .transaction(async (tx) => {
      value = await fn(tx);
      throw new RolledBack();
    })
    .catch((err: unknown) => {
      if (!(err instanceof RolledBack)) throw err;
    });
  return value as T;
}

/** A test's own statements, run unrecorded before the ones it inspects. */
export type Setup = (tx: Queryable) => Promise<unknown>;

/** `q`, with every statement sent through it, and its parameters, added to `log`. */
export function recordingInto(q: Queryable, log: SentStatement[]): Queryable {
  return {
    query: (sql, params) => {
      log.push({ sql: sqlText(sql), params });
      return q.query(sql, params);
    },
    exec: (sql) => {
      log.push({ sql });
      return q.exec(sql);
    },
  } as Queryable;
}

/** Every statement fn sends after `setup`, run for real in a transaction that is then rolled back. */
export async function sentBy(db: Db, fn: (q: Queryable) => Promise<unknown>, setup?: Setup): Promise<SentStatement[]> {
  const log: SentStatement[] = [];
  await rolledBack(db, async (tx) => {
    await setup?.(tx);
    await fn(recordingInto(tx, log));
  });
  return log;
}

interface AnalyzedNode extends PlanNode {
  'Actual Loops'?: number;
  Plans?: AnalyzedNode[];
}

/**
 * The partitions of `table` that the statements read when they run (EXPLAIN ANALYZE, in a transaction rolled
 * back after `setup`), each with how it was read: a partition the planner kept but Postgres pruned at run
 * time, or never reached, is not counted. The settings among the statements are replayed in order. A test's
 * partitions are small enough to read whole, so sequential scans are off: the plan is a large store's.
 */
export function partitionsRead(
  db: Db,
  statements: readonly SentStatement[],
  setup?: Setup,
  table = 'inbox',
): Promise<Map<string, string[]>> {
  return partitionsIn(db, statements, setup, table, 'read');
}

/**
 * The partitions of `table` in the statements' plans (EXPLAIN, without running them), each with its scans: what
 * Postgres planned, before any pruning at run time. Planning costs for every partition in the plan, tens of ms
 * over a year of days, so a statement meant for one day should plan that day alone.
 */
export function partitionsPlanned(
  db: Db,
  statements: readonly SentStatement[],
  setup?: Setup,
  table = 'inbox',
): Promise<Map<string, string[]>> {
  return partitionsIn(db, statements, setup, table, 'planned');
}

async function partitionsIn(
  db: Db,
  statements: readonly SentStatement[],
  setup: Setup | undefined,
  table: string,
  what: 'read' | 'planned',
): Promise<Map<string, string[]>> {
  return rolledBack(db, async (tx) => {
    await setup?.(tx);
    await tx.exec('SET LOCAL enable_seqscan = off');
    const parts = await tx.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)`,
      [table],
    );
    const partitions = new Set(parts.rows.map((r) => r.name));
    const found = new Map<string, string[]>();
    const walk = (node: AnalyzedNode): void => {
      const name = node['Relation Name'];
      if (name !== undefined && partitions.has(name) && (what === 'planned' || (node['Actual Loops'] ?? 0) > 0)) {
        found.set(name, [...(found.get(name) ?? []), node['Node Type']]);
      }
      for (const child of node.Plans ?? []) walk(child);
    };
    for (const s of statements) {
      if (s.params === undefined) {
        await tx.exec(s.sql);
        continue;
      }
      const res = await tx.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (${what === 'read' ? 'ANALYZE, ' : ''}FORMAT JSON) ${s.sql}`,
        s.params,
      );
      const raw = res.rows[0]!['QUERY PLAN'];
      walk(((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: AnalyzedNode }>)[0]!.Plan);
    }
    return found;
  });
}
