/**
 * Statements that run thousands of times a second (the ingress flush) carry a
 * marker comment with a name: on postroom's own Postgres pool they become named
 * prepared statements, parsed and planned once per connection instead of once
 * per execution (for the flush that was most of Postgres' work per statement).
 * Any other store, or an application's own pool (which may DISCARD ALL behind
 * the driver's back), runs the same text as an ordinary statement: the marker
 * is only a comment. The name must change whenever the text does.
 */
const MARKER = /^\/\* postroom prepared: ([a-z0-9_]+) \*\//;

export function preparedName(name: string): string {
  if (!/^[a-z0-9_]+$/.test(name)) throw new TypeError(`prepared statement name must be [a-z0-9_]: ${name}`);
  return `/* postroom prepared: ${name} */`;
}

/** The statement name a SQL text asks for, if any. */
export function preparedNameOf(sql: string): string | undefined {
  return sql.startsWith('/* postroom prepared: ') ? MARKER.exec(sql)?.[1] : undefined;
}
