import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import pg from 'pg';
import { inject } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import { createPgliteDb } from '../../src/db/pglite.js';
import { migrate } from '../../src/db/migrate.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';

/**
 * Tests use DATABASE_URL when set, else Postgres on 127.0.0.1:5432 when it answers,
 * else embedded PGlite. Each test database is created fresh and dropped after.
 */
export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

let detected: Promise<string | undefined> | undefined;

export function adminUrl(): Promise<string | undefined> {
  detected ??= (async () => {
    const candidate = process.env.DATABASE_URL || DEFAULT_ADMIN_URL;
    const client = new pg.Client({ connectionString: candidate, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return candidate;
    } catch (err) {
      if (process.env.DATABASE_URL) throw new Error(`DATABASE_URL is set but does not answer: ${(err as Error).message}`);
      return undefined;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return detected;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** This run's id (global-setup.ts), or undefined outside a vitest run (a bench, a script). */
function runId(): string | undefined {
  try {
    return inject('runId') || undefined;
  } catch {
    return undefined;
  }
}

function databaseUrl(admin: string, name: string): string {
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * An admin connection, waiting out a server whose connection slots are all taken (53300, "too many clients"):
 * CI runs the suite on three Node lines at once against one server, and a run's teardown comes while the
 * others are busy. Given up after a minute.
 */
async function connectAdmin(admin: string): Promise<pg.Client> {
  const until = Date.now() + 60_000;
  for (;;) {
    const client = new pg.Client({ connectionString: admin });
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      if ((err as { code?: unknown }).code !== '53300' || Date.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function dropDatabase(admin: string, name: string): Promise<void> {
  const c = await connectAdmin(admin);
  try {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

/**
 * A fresh Postgres database on the test server: empty, or a copy of `template`. In a vitest run its name carries
 * the run's id and drop() leaves it to the run's teardown (global-setup.ts), which drops them all side by side.
 */
export async function createPostgresDatabase(prefix = 'postroom_t', options: { template?: string } = {}): Promise<TestDatabase> {
  const admin = await adminUrl();
  if (!admin) throw new Error('no Postgres available');
  const run = runId();
  const name = `${prefix}_${run ? `${run}_` : ''}${randomBytes(6).toString('hex')}`;
  const client = await connectAdmin(admin);
  try {
    await client.query(`CREATE DATABASE ${name}${options.template ? ` TEMPLATE ${options.template}` : ''}`);
  } finally {
    await client.end();
  }
  return {
    url: databaseUrl(admin, name),
    name,
    async drop() {
      if (!run) await dropDatabase(admin, name);
    },
  };
}

/** For global-setup.ts: a database with every migration applied, to clone migrated test databases from. */
export async function createMigratedTemplate(admin: string, run: string): Promise<string> {
  const name = `postroom_tpl_${run}`;
  const client = await connectAdmin(admin);
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const db = createPgDb({ url: databaseUrl(admin, name), poolSize: 1, logger: silentLogger(), connectTimeoutMs: 2000 });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
  return name;
}

/** Connections the teardown drops databases on at once: a few, so that it takes no slots the other suites need. */
const DROPPING_CONNECTIONS = 6;

/**
 * For global-setup.ts: drops every database of this run (and its template), on DROPPING_CONNECTIONS connections,
 * each taking the next name. The template goes last: a database still being cloned from it would hold it.
 */
export async function dropRunDatabases(admin: string, run: string): Promise<void> {
  const client = await connectAdmin(admin);
  let names: string[];
  try {
    const res = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE strpos(datname, $1) > 0`, [`_${run}`]);
    names = res.rows.map((r) => r.datname).filter((n) => n.includes(`_${run}_`));
  } finally {
    await client.end();
  }
  const queue = [...names];
  const dropper = async (): Promise<void> => {
    const c = await connectAdmin(admin);
    try {
      for (let name = queue.pop(); name !== undefined; name = queue.pop()) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  };
  await Promise.all(Array.from({ length: Math.min(DROPPING_CONNECTIONS, queue.length) }, dropper));
  await dropDatabase(admin, `postroom_tpl_${run}`);
}

export type StoreKind = 'postgres' | 'pglite';

export interface TestStore {
  kind: StoreKind;
  db: Db;
  /** Set for Postgres; child processes and proxies connect here. */
  url: string | undefined;
  cleanup(): Promise<void>;
}

/**
 * Kinds to run store-parametrised suites against: PGlite always, Postgres when one answers. POSTROOM_TEST_STORES
 * (`postgres`, `pglite`, or both, comma-separated) keeps only those: CI runs the suite again on further Node
 * lines, and there the PGlite twins would run the same WebAssembly a second and third time (.ci/run).
 */
export async function availableStoreKinds(): Promise<StoreKind[]> {
  return selectStoreKinds((await adminUrl()) !== undefined, process.env.POSTROOM_TEST_STORES);
}

/**
 * A kind named in `only` that this machine cannot give is an error, not a skip: a run asked for Postgres
 * alone would otherwise pass with every store-parametrised suite skipped when Postgres is down.
 */
export function selectStoreKinds(postgresAnswers: boolean, only: string | undefined): StoreKind[] {
  const kinds: StoreKind[] = postgresAnswers ? ['postgres', 'pglite'] : ['pglite'];
  if (!only) return kinds;
  const wanted = only.split(',').map((k) => k.trim());
  const unknown = wanted.filter((k) => k !== 'postgres' && k !== 'pglite');
  if (unknown.length > 0) throw new Error(`POSTROOM_TEST_STORES: unknown store ${unknown.join(', ')}; use postgres, pglite or both`);
  if (wanted.includes('postgres') && !postgresAnswers) {
    throw new Error(
      `POSTROOM_TEST_STORES asks for postgres, but none answers at ${DEFAULT_ADMIN_URL.replace(/\/postgres$/, '')}; ` +
        'start it (pg_ctlcluster <version> main start) or set DATABASE_URL to an admin URL',
    );
  }
  return kinds.filter((k) => wanted.includes(k));
}

const templates = new Map<string, Promise<Blob>>();
/** A data folder global-setup.ts made once for the run, bare or migrated: a store starts from it rather than from initdb. */
function pgliteTemplate(migrated: boolean): Promise<Blob> {
  const file = inject(migrated ? 'pgliteMigratedTemplate' : 'pgliteTemplate');
  let blob = templates.get(file);
  if (!blob) {
    blob = fs.readFile(file).then((bytes) => new Blob([bytes]));
    templates.set(file, blob);
  }
  return blob;
}

export async function openTestStore(kind: StoreKind, options: { poolSize?: number; migrate?: boolean } = {}): Promise<TestStore> {
  let store: TestStore;
  // A store asked for migrated starts as a copy of the run's migrated template; migrate() below then finds
  // nothing to apply, and still checks that the copy is current.
  const migrated = options.migrate !== false;
  if (kind === 'postgres') {
    const template = migrated ? inject('pgTemplate') : '';
    const database = await createPostgresDatabase('postroom_t', template ? { template } : {});
    const db = createPgDb({ url: database.url, poolSize: options.poolSize ?? 4, logger: silentLogger(), connectTimeoutMs: 2000 });
    store = {
      kind,
      db,
      url: database.url,
      async cleanup() {
        await db.close().catch(() => undefined);
        await database.drop();
      },
    };
  } else {
    const db = await createPgliteDb({ dataDir: undefined, initialData: await pgliteTemplate(migrated) });
    store = { kind, db, url: undefined, cleanup: () => db.close() };
  }
  if (migrated) await migrate(store.db);
  return store;
}

/** The default store for suites that are not parametrised: Postgres when it answers, else PGlite. */
export async function openDefaultTestStore(options: { poolSize?: number; migrate?: boolean } = {}): Promise<TestStore> {
  return openTestStore((await adminUrl()) ? 'postgres' : 'pglite', options);
}

/**
 * Partitions of the inbox for the `days` UTC days before today: migrate creates today's and the next
 * days', and a test that dates rows in the past (received_at = now() - …) needs the days it names.
 */
export async function createPastPartitions(q: Queryable, days: number): Promise<void> {
  await q.query(`SELECT inbox_partition_create((now() AT TIME ZONE 'UTC')::date - i) FROM generate_series(1, $1::int) i`, [days]);
}

/** Autovacuum off for the inbox's partitions (a partitioned table has no storage of its own to set it on). */
export async function disableInboxAutovacuum(q: Queryable): Promise<void> {
  const parts = await q.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass('inbox')`,
  );
  for (const p of parts.rows) await q.exec(`ALTER TABLE "${p.name}" SET (autovacuum_enabled = false)`);
}

/**
 * A pool of one new connection to `url` whose backend pid is congruent to `pid` modulo 16 (any backend when `pid`
 * is undefined), with a 3 s statement timeout so that a statement left waiting fails the test rather than hangs it.
 * The counters kept by triggers were once sharded by pid % 16: two such backends shared a counter row.
 */
export async function openBackendLike(url: string, pid: number | undefined): Promise<Db> {
  for (let tries = 0; tries < 400; tries++) {
    const db = createPgDb({ url, poolSize: 1, logger: silentLogger(), connectTimeoutMs: 2000, statementTimeoutMs: 3000 });
    const own = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    if (pid === undefined || own % 16 === pid % 16) return db;
    await db.close();
  }
  throw new Error(`no backend with a pid congruent to ${pid} modulo 16 in 400 connections`);
}
