import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PostroomError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { fillIdLedger, moveHistory, PARTITIONED_INBOX_VERSION, PARTITIONS_AHEAD_DAYS } from './inbox-layout.js';
import { LEGACY_SCHEMA, searchPath } from './schema.js';
import type { Db, Queryable, Session } from './types.js';

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

/** The ledger, always named with its schema: it must not depend on how a session resolves names (see migrate). */
function ledger(schema: string): string {
  return `${quoteIdent(schema)}.postroom_migrations`;
}

function bookkeeping(schema: string): string {
  return `
CREATE TABLE IF NOT EXISTS ${ledger(schema)} (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;
}

async function appliedMigrations(db: Queryable, schema: string): Promise<Map<number, { name: string; checksum: string }>> {
  const map = new Map<number, { name: string; checksum: string }>();
  if (!(await ledgerIn(db, schema))) return map;
  const res = await db.query<{ version: number; name: string; checksum: string }>(
    `SELECT version, name, checksum FROM ${ledger(schema)} ORDER BY version`,
  );
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
  return compare(readMigrations(dir), await appliedMigrations(db, db.schema));
}

type ObjectKind = 'relation' | 'type' | 'function';

/**
 * The objects a migration creates, by name: what the move from `public` has to take
 * along. Indexes, constraints, triggers and owned sequences (identity, serial) follow
 * their table on their own; a later `RENAME TO` is followed too.
 */
export function objectsCreatedBy(sql: string): Array<{ kind: ObjectKind; name: string }> {
  const code = sql.replace(/--[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
  const ident = String.raw`(?:public\.)?(?:"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*))`;
  const ifNotExists = String.raw`(?:IF\s+NOT\s+EXISTS\s+)?`;
  const patterns: Array<[ObjectKind, string]> = [
    ['relation', String.raw`\bCREATE\s+(?:UNLOGGED\s+)?(?:TABLE|SEQUENCE)\s+${ifNotExists}${ident}`],
    ['relation', String.raw`\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+)?VIEW\s+${ifNotExists}${ident}`],
    [
      'relation',
      String.raw`\bALTER\s+(?:TABLE|SEQUENCE|VIEW|MATERIALIZED\s+VIEW)\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?(?:public\.)?(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)\s+RENAME\s+TO\s+${ident}`,
    ],
    ['type', String.raw`\bCREATE\s+(?:TYPE|DOMAIN)\s+${ident}`],
    ['function', String.raw`\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+${ident}`],
  ];
  const out: Array<{ kind: ObjectKind; name: string }> = [];
  for (const [kind, source] of patterns) {
    for (const m of code.matchAll(new RegExp(source, 'gi'))) {
      // Quoted names keep their case; unquoted ones fold to lower case, as Postgres does.
      const name = m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2]!.toLowerCase();
      out.push({ kind, name });
    }
  }
  return out;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Refuses to run a migration whose unqualified CREATEs would land anywhere but the installation's schema. */
async function assertCreatesIn(tx: Queryable, schema: string): Promise<void> {
  const res = await tx.query<{ current: string | null }>('SELECT current_schema() AS current');
  const current = res.rows[0]?.current ?? null;
  if (current !== schema) {
    throw new PostroomError(
      'migration_schema_unresolved',
      `Migrations would be created in ${current === null ? 'no schema' : `schema ${current}`} instead of ${schema}; nothing was applied. Check that the database role may use schema ${schema}, then run migrate again.`,
      { details: { schema, current } },
    );
  }
}

async function schemaExists(db: Queryable, schema: string): Promise<boolean> {
  const res = await db.query<{ present: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS present', [schema]);
  return res.rows[0]?.present === true;
}

async function ledgerIn(db: Queryable, schema: string): Promise<boolean> {
  const res = await db.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
    `${quoteIdent(schema)}.postroom_migrations`,
  ]);
  return res.rows[0]?.present === true;
}

/**
 * Installations before the schema layout kept their tables (and the migration ledger)
 * in `public`. Moves every object their applied migrations created into `schema`, in
 * one transaction: ALTER … SET SCHEMA rewrites no data, so no row can be lost, and a
 * failure leaves everything where it was. Objects that are not postroom's stay put.
 */
async function moveLegacyInstallation(session: Session, schema: string, files: MigrationFile[], logger: Logger | undefined): Promise<void> {
  if (!(await ledgerIn(session, LEGACY_SCHEMA)) || (await ledgerIn(session, schema))) return;
  await session.transaction(async (tx) => {
    const ledger = await tx.query<{ version: number }>(`SELECT version FROM ${LEGACY_SCHEMA}.postroom_migrations ORDER BY version`);
    const known = new Map(files.map((f) => [f.version, f]));
    const unknown = ledger.rows.map((r) => Number(r.version)).filter((v) => !known.has(v));
    if (unknown.length) {
      throw new PostroomError(
        'migration_unknown_versions',
        `The installation in schema public has migrations this build does not know (${unknown.join(', ')}); move it with the build that applied them.`,
        { details: { unknown } },
      );
    }
    if (!(await schemaExists(tx, schema))) await tx.exec(`CREATE SCHEMA ${quoteIdent(schema)}`);
    const moved: string[] = [];
    const seen = new Set<string>();
    for (const r of ledger.rows) {
      for (const object of objectsCreatedBy(known.get(Number(r.version))!.sql)) {
        const id = `${object.kind}:${object.name}`;
        if (seen.has(id)) continue;
        seen.add(id);
        const statement = await legacyMoveStatement(tx, object.kind, object.name, schema);
        if (!statement) continue;
        await tx.exec(statement);
        moved.push(object.name);
      }
    }
    await tx.exec(`ALTER TABLE ${LEGACY_SCHEMA}.postroom_migrations SET SCHEMA ${quoteIdent(schema)}`);
    logger?.info({ from: LEGACY_SCHEMA, to: schema, moved }, 'moved the existing installation into its own schema');
  });
}

const RELATION_KEYWORD: Record<string, string> = {
  r: 'TABLE',
  p: 'TABLE',
  v: 'VIEW',
  m: 'MATERIALIZED VIEW',
  S: 'SEQUENCE',
  f: 'FOREIGN TABLE',
};

/** The ALTER … SET SCHEMA for one object still in public, or undefined when it is not there (dropped, or a relation owned by a table). */
async function legacyMoveStatement(tx: Queryable, kind: ObjectKind, name: string, schema: string): Promise<string | undefined> {
  const target = `${LEGACY_SCHEMA}.${quoteIdent(name)}`;
  if (kind === 'relation') {
    const res = await tx.query<{ relkind: string; owned: boolean }>(
      `SELECT c.relkind, EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')) AS owned
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
      [LEGACY_SCHEMA, name],
    );
    const row = res.rows[0];
    const keyword = row && RELATION_KEYWORD[row.relkind];
    // A sequence owned by a column moves with its table; moving it on its own is refused.
    if (!row || !keyword || (row.relkind === 'S' && row.owned)) return undefined;
    return `ALTER ${keyword} ${target} SET SCHEMA ${quoteIdent(schema)}`;
  }
  if (kind === 'type') {
    const res = await tx.query<{ typtype: string }>(
      `SELECT t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = $1 AND t.typname = $2`,
      [LEGACY_SCHEMA, name],
    );
    const row = res.rows[0];
    if (!row) return undefined;
    return `ALTER ${row.typtype === 'd' ? 'DOMAIN' : 'TYPE'} ${target} SET SCHEMA ${quoteIdent(schema)}`;
  }
  const res = await tx.query<{ signature: string; prokind: string }>(
    `SELECT p.oid::regprocedure::text AS signature, p.prokind FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2`,
    [LEGACY_SCHEMA, name],
  );
  if (!res.rows.length) return undefined;
  // Every overload of the name, each by its full signature.
  return res.rows
    .map((r) => `ALTER ${r.prokind === 'p' ? 'PROCEDURE' : 'FUNCTION'} ${r.signature} SET SCHEMA ${quoteIdent(schema)}`)
    .join(';\n');
}

/** Whether migration 024 left no finished row behind (a new installation): dropping the table then is instant. */
async function historyLeftEmpty(session: Session): Promise<boolean> {
  const present = await session.query<{ present: boolean }>(`SELECT to_regclass('inbox_unpartitioned') IS NOT NULL AS present`);
  if (present.rows[0]?.present !== true) return true;
  const res = await session.query<{ empty: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM inbox_unpartitioned) AS empty');
  return res.rows[0]?.empty === true;
}

/** The partitions of the next days, and the history's move when asked; both only once the inbox is partitioned. */
async function afterMigrations(
  session: Session,
  options: {
    logger?: Logger;
    history?: 'move' | 'leave';
    onProgress?: (progress: { step: 'ledger' | 'history'; done: number; total: number }) => void;
  },
): Promise<void> {
  const res = await session.query<{ ready: boolean }>(`SELECT to_regprocedure('inbox_partitions_ensure(integer)') IS NOT NULL AS ready`);
  if (res.rows[0]?.ready !== true) return;
  await session.query('SELECT inbox_partitions_ensure($1::int)', [PARTITIONS_AHEAD_DAYS]);
  if (options.history === 'leave' && !(await historyLeftEmpty(session))) return;
  await moveHistory(session, options);
}

/**
 * Applies pending migrations, each in its own transaction together with its
 * bookkeeping row, while holding an advisory lock so replicas starting together
 * migrate once. First makes sure the installation's schema exists, and moves an
 * installation from the layout before it (tables in `public`) there.
 *
 * Before the migration that partitions the inbox, every stored id goes into the ledger, in batches
 * (src/db/inbox-layout.ts); after the last migration, the finished rows it left behind move into the
 * partitioned history in batches too, unless `history` is 'leave' (serve at start: ingress waits for
 * migrate, so serve leaves the long part to `postroom migrate`, which can run beside it), and the next
 * days' partitions are created.
 */
export async function migrate(
  db: Db,
  options: {
    logger?: Logger;
    dir?: string;
    history?: 'move' | 'leave';
    onProgress?: (progress: { step: 'ledger' | 'history'; done: number; total: number }) => void;
  } = {},
): Promise<{ applied: Array<{ version: number; name: string }> }> {
  const files = readMigrations(options.dir);
  const result = await db.withAdvisoryLock('migrate', async (session) => {
    await moveLegacyInstallation(session, db.schema, files, options.logger);
    // Checked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema is there.
    if (!(await schemaExists(session, db.schema))) await session.exec(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(db.schema)}`);
    await session.exec(bookkeeping(db.schema));
    const status = compare(files, await appliedMigrations(session, db.schema));
    for (const file of status.pending) {
      if (file.version === PARTITIONED_INBOX_VERSION) await fillIdLedger(session, options);
      await session.transaction(async (tx) => {
        // Migrations name their objects unqualified, so each one runs with the search path set afresh. A
        // session that first resolved its path while another replica was creating the schema can keep
        // resolving as if the schema did not exist (Postgres 15 caches the path and can miss that change),
        // and would install a second copy of every table into public, and use it. Setting the path makes
        // Postgres resolve it again, now that the schema is committed.
        await tx.exec(`SET LOCAL search_path TO ${searchPath(db.schema)}`);
        await assertCreatesIn(tx, db.schema);
        await tx.exec(file.sql);
        await tx.query(`INSERT INTO ${ledger(db.schema)} (version, name, checksum) VALUES ($1, $2, $3)`, [
          file.version,
          file.name,
          file.checksum,
        ]);
      });
      options.logger?.info({ version: file.version, name: file.name }, 'migration applied');
    }
    await afterMigrations(session, options);
    return status.pending;
  });
  if (!result.acquired) throw new PostroomError('migration_lock', 'Could not take the migration lock');
  return { applied: result.value };
}
