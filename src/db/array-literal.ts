/** What a one-dimensional array parameter may hold: text, numbers (ints, floats), booleans and nulls. */
export type ArrayElement = string | number | boolean | null | undefined;

const NEEDS_ESCAPE = /["\\]/;

/**
 * A Postgres array literal, `{"a","b",NULL}`, for a parameter the SQL casts to an array type
 * (`$1::text[]`, `$2::int4[]`, `$3::timestamptz[]`, …).
 *
 * node-postgres builds the same literal from a JS array, but runs every element through its
 * value conversion and two regular-expression replacements: together about 20 µs per event in
 * `serve`, whose statements send some forty array elements per event (bench/cpu.ts's profiles).
 * Every element is quoted, as node-postgres quotes them, so a string that reads NULL stays a
 * string; inside quotes only `"` and `\` need a backslash.
 *
 * Most arrays hold only strings with nothing to escape, nulls and finite numbers: for those the
 * literal is JSON.stringify's output with braces for brackets. JSON quotes every string, writes
 * null and finite numbers as Postgres reads them unquoted, and needs a backslash exactly where
 * the element would need one here (a quote, a backslash, a control character, a lone surrogate),
 * so output without one is already a valid literal of the same values. It is built natively in
 * one pass, where the loop below grows the literal piece by piece: about 50 short-lived strings
 * per row of an ingress flush, which bench/alloc.ts shows as a third of what ingress would
 * allocate per event beyond the minimal group commit.
 */
export function arrayLiteral(values: readonly ArrayElement[]): string {
  if (jsonReady(values)) {
    const json = JSON.stringify(values);
    if (!json.includes('\\')) return `{${json.slice(1, -1)}}`;
  }
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

/** Strings, nulls and finite numbers only: what JSON writes as Postgres reads it (booleans are written t and f below). */
function jsonReady(values: readonly ArrayElement[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === 'string' || v === null || v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) return false;
  }
  return true;
}
