import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PostroomError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import type { Db, Queryable } from './types.js';

/** Both src/db and dist/db sit two levels below the package root, beside migrations/. */
export const DEFAULT_MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

export interface MigrationFile {
  version: number;
  name: string;
  checksum: string;
  sql: string;
}

export interface MigrationStatus {
  applied: number[];
  pending: MigrationFile[];
  /** Versions in the database that this build does not know: the database is ahead of the code. */
  unknown: number[];
  current: boolean;
}

const FILE_PATTERN = /^(\d{3,})_([a-z0-9_]+)\.sql$/;

export function readMigrations(dir: string = DEFAULT_MIGRATIONS_DIR): MigrationFile[] {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.sql'));
  const out: MigrationFile[] = [];
  const seen = new Set<number>();
  for (const file of files) {
    const m = FILE_PATTERN.exec(file);
    if (!m) throw new PostroomError('migration_name_invalid', `Migration file ${file} must be named NNN_snake_case.sql`);
    const version = Number(m[1]);
    if (seen.has(version)) throw new PostroomError('migration_duplicate', `Two migration files share version ${version}`);
    seen.add(version);
    const sql = fs.readFileSync(path.join(dir, file), 'utf8');
    out.push({ version, name: m[2] as string, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return out.sort((a, b) => a.version - b.version);
}

const BOOKKEEPING = `
CREATE TABLE IF NOT EXISTS postroom_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

async function appliedMigrations(db: Queryable): Promise<Map<number, { name: string; checksum: string }>> {
  const exists = await db.query<{ present: boolean }>(`SELECT to_regclass('postroom_migrations') IS NOT NULL AS present`);
  const map = new Map<number, { name: string; checksum: string }>();
  if (!exists.rows[0]?.present) return map;
  const res = await db.query<{ version: number; name: string; checksum: string }>('SELECT version, name, checksum FROM postroom_migrations ORDER BY version');
  for (const r of res.rows) map.set(Number(r.version), { name: r.name, checksum: r.checksum });
  return map;
}

function compare(files: MigrationFile[], applied: Map<number, { name: string; checksum: string }>): MigrationStatus {
  for (const f of files) {
    const a = applied.get(f.version);
    if (a && a.checksum !== f.checksum) {
      throw new PostroomError(
        'migration_checksum_mismatch',
        `Migration ${f.version}_${f.name} was changed after it was applied (checksum differs). Applied migrations are immutable: restore the file and add a new migration instead.`,
        { details: { version: f.version } },
      );
    }
  }
  const known = new Set(files.map((f) => f.version));
  const unknown = [...applied.keys()].filter((v) => !known.has(v));
  const pending = files.filter((f) => !applied.has(f.version));
  return { applied: [...applied.keys()], pending, unknown, current: pending.length === 0 };
}

export async function migrationStatus(db: Db, dir?: string): Promise<MigrationStatus> {
  return compare(readMigrations(dir), await appliedMigrations(db));
}

/**
 * Applies pending migrations, each in its own transaction together with its
 * bookkeeping row, while holding an advisory lock so replicas starting together
 * migrate once.
 */
export async function migrate(db: Db, options: { logger?: Logger; dir?: string } = {}): Promise<{ applied: MigrationFile[] }> {
  const files = readMigrations(options.dir);
  const result = await db.withAdvisoryLock('migrate', async (session) => {
    await session.exec(BOOKKEEPING);
    const status = compare(files, await appliedMigrations(session));
    for (const file of status.pending) {
      await session.transaction(async (tx) => {
        await tx.exec(file.sql);
        await tx.query('INSERT INTO postroom_migrations (version, name, checksum) VALUES ($1, $2, $3)', [file.version, file.name, file.checksum]);
      });
      options.logger?.info({ version: file.version, name: file.name }, 'migration applied');
    }
    return status.pending;
  });
  if (!result.acquired) throw new PostroomError('migration_lock', 'Could not take the migration lock');
  return { applied: result.value };
}
