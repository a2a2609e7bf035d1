import { createHash } from 'node:crypto';
import type { NamedStatement, Sql } from './types.js';

/**
 * A statement that runs often enough to keep its plan: on Postgres (unless
 * POSTROOM_DB_PREPARED_STATEMENTS=off) each connection parses and plans it
 * once, as a protocol-level prepared statement, instead of on every call. The
 * worker's statements are each planned in 0.3–0.7 ms, a sixth of its Postgres
 * time per event (bench/statements.ts). The name carries a hash of the text, so
 * two versions of postroom behind one pooler never mistake each other's statements.
 */
export function named(name: string, text: string): NamedStatement {
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 10);
  return Object.freeze({ name: `postroom_${name}_${hash}`, text });
}

export function sqlText(sql: Sql): string {
  return typeof sql === 'string' ? sql : sql.text;
}
