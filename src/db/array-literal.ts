/** What a one-dimensional array parameter may hold: text, numbers (ints, floats), booleans and nulls. */
export type ArrayElement = string | number | boolean | null | undefined;

const NEEDS_ESCAPE = /["\\]/;

/**
 * A Postgres array literal, `{"a","b",NULL}`, for a parameter the SQL casts to an array type
 * (`$1::text[]`, `$2::int4[]`, `$3::timestamptz[]`, …).
 *
 * node-postgres builds the same literal from a JS array, but runs every element through its
 * value conversion and two regular-expression replacements: together about 20 µs per event in
 * `serve`, whose statements send some forty array elements per event (docs/benchmarks-history.md,
 * "stop 25"). Here an element with nothing to escape, nearly every id, type and status, is
 * copied as it is. Every element is quoted, as node-postgres quotes them, so a string that reads
 * NULL stays a string; inside quotes only `"` and `\` need a backslash.
 */
export function arrayLiteral(values: readonly ArrayElement[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) {
      out += 'NULL';
    } else if (typeof v === 'boolean') {
      out += v ? 't' : 'f';
    } else if (typeof v === 'number') {
      // As node-postgres writes a number (String()): NaN and ±Infinity are valid floats in Postgres.
      out += `"${String(v)}"`;
    } else {
      out += NEEDS_ESCAPE.test(v) ? `"${v.replace(/["\\]/g, '\\$&')}"` : `"${v}"`;
    }
  }
  return `${out}}`;
}
