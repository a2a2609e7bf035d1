import { PostroomError } from '../errors.js';

/**
 * postroom keeps its tables in a schema of its own, so that an embedder's database
 * can have its own `inbox` or `webhook_endpoints` in `public` (or anywhere else).
 * Connections put this schema first on the search_path: postroom's SQL stays
 * unqualified and resolves to postroom's tables, while a handler writing through
 * `ctx.tx` still reaches the application's tables (in public, or wherever the
 * application's own pool pointed) by the names it always used.
 */
export const DEFAULT_SCHEMA = 'postroom';

/** Where installations before the schema layout kept their tables. */
export const LEGACY_SCHEMA = 'public';

// Lower-case only: the name is used unquoted in search_path and DDL, and an unquoted
// identifier folds to lower case, so anything else would name a different schema.
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

export function isValidSchemaName(name: string): boolean {
  return SCHEMA_PATTERN.test(name) && !name.startsWith('pg_') && name !== LEGACY_SCHEMA && name !== 'information_schema';
}

export function assertSchemaName(name: string): string {
  if (!isValidSchemaName(name)) {
    throw new PostroomError(
      'db_schema_invalid',
      `"${name.slice(0, 80)}" is not a schema postroom can use: expected lower-case letters, digits and _ (at most 63, not starting with a digit or pg_, not public).`,
      { details: { schema: name.slice(0, 80) } },
    );
  }
  return name;
}

/** The advisory-lock name for a schema: unchanged for the default, so replicas of every version agree. */
/** The search_path of postroom's own connections: its schema, then what Postgres has by default. */
export function searchPath(schema: string): string {
  return `${schema},"$user",public`;
}

export function scopedLockName(schema: string, name: string): string {
  return schema === DEFAULT_SCHEMA ? name : `${schema}/${name}`;
}
