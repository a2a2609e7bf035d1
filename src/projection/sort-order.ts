/*
 * The projection's merge rules as sort orders, so each is written once and used
 * twice: as ORDER BY to reduce a batch's facts per key (DISTINCT ON), and as a
 * comparison to choose between the stored fact and the incoming one on conflict.
 * Event ids compare bytewise ("C") so every database orders them alike.
 */
export interface SortKey {
  column: string;
  descending: boolean;
  nullsFirst: boolean;
  bytewise?: boolean;
}
export type SortOrder = readonly SortKey[];

const asc = (column: string, bytewise = false): SortKey => ({ column, descending: false, nullsFirst: false, bytewise });
const desc = (column: string, bytewise = false, nullsFirst = true): SortKey => ({ column, descending: true, nullsFirst, bytewise });

export const RANKED = (rank: string, at: string, id: string): SortOrder => [desc(rank), asc(at), asc(id, true)];
export const LATEST = (at: string, id: string): SortOrder => [desc(at, false, false), desc(id, true)];
/**
 * A participant's latest act: the later instant; at the same instant an act a re-read
 * showed (the service's own answer to "which came last"), then the greater id.
 */
export const LATEST_ACT = (at: string, reread: string, id: string): SortOrder => [
  desc(at, false, false),
  desc(reread, false, false),
  desc(id, true),
];
export const EARLIEST_CREATED: SortOrder = [asc('created_at')];

/** The ORDER BY list of a sort order. */
export function orderBy(order: SortOrder): string {
  return order
    .map((k) => `${k.column}${k.bytewise ? ' COLLATE "C"' : ''} ${k.descending ? 'DESC' : 'ASC'} NULLS ${k.nullsFirst ? 'FIRST' : 'LAST'}`)
    .join(', ');
}

/**
 * Whether row `a` sorts strictly before row `b` in `order`, as a boolean that
 * is never NULL: what ORDER BY would put first, with the same NULL placement.
 * Evaluated inline for each conflicting row of an upsert, so no subquery has to
 * sort the two rows: that would be one sort per fact per conflicting row, a
 * large share of the correspondence upsert's time in Postgres.
 */
export function sortsBefore(order: SortOrder, a: string, b: string): string {
  const terms = order.map((k) => {
    const [x, y] = [`${a}.${k.column}`, `${b}.${k.column}`];
    const c = k.bytewise ? ' COLLATE "C"' : '';
    const nullFirst = k.nullsFirst ? `(${x} IS NULL AND ${y} IS NOT NULL)` : `(${x} IS NOT NULL AND ${y} IS NULL)`;
    return {
      before: `(${nullFirst} OR coalesce(${x}${c} ${k.descending ? '>' : '<'} ${y}${c}, false))`,
      same: `${x} IS NOT DISTINCT FROM ${y}`,
    };
  });
  return terms.reduceRight<string>((rest, t) => (rest === 'false' ? t.before : `(${t.before} OR (${t.same} AND ${rest}))`), 'false');
}
