import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { migrate, objectsCreatedBy, readMigrations } from '../../src/db/migrate.js';
import { createPgDb } from '../../src/db/pg.js';
import { createPgliteDb } from '../../src/db/pglite.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, createPostgresDatabase, type StoreKind } from '../support/db.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** What the layout before the schema change had: migrations up to 005, applied in public. */
const LEGACY_VERSIONS = 5;

/** One row in every table 001–005 create, written the way those versions' code did. */
const LEGACY_ROWS = `
INSERT INTO inbox (event_id, type, payload, status) VALUES ('evt_legacy_1', 'correspondence.created', '{"a":1}', 'processed'), ('evt_legacy_2', 'participant.acted', '{}', 'dead');
INSERT INTO correspondence_projection (correspondence_id, status, status_rank, last_event_id, last_event_type, last_event_at) VALUES ('cor_legacy', 'live', 1, 'evt_legacy_1', 'correspondence.created', now());
INSERT INTO participant_projection (correspondence_id, participant_id, state, state_rank, state_at, state_event_id) VALUES ('cor_legacy', 'par_1', 'held', 1, now(), 'evt_legacy_2');
INSERT INTO webhook_endpoints (endpoint_id, url) VALUES ('we_legacy', 'https://example.test/hooks');
INSERT INTO endpoint_secrets (endpoint_id, state, ciphertext, nonce, auth_tag, key_id, version) VALUES ('we_legacy', 'current', '\\x01', '\\x02', '\\x03', 'k1', 1);
INSERT INTO sent_correspondence (correspondence_id) VALUES ('cor_legacy');
INSERT INTO reconcile_watermarks (endpoint_id, delivery_status, watermark) VALUES ('we_legacy', 'dead', now());
INSERT INTO reconcile_gaps (event_id, event_type, endpoint_id, delivery_id) VALUES ('evt_gap', 'participant.acted', 'we_legacy', 'del_1');
INSERT INTO reconcile_runs (outcome) VALUES ('clean');
`;

interface LegacyTarget {
  /** Runs SQL with the search_path the old code had (public). */
  exec(sql: string): Promise<void>;
  query<R>(sql: string, params?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

/** The old migrator, as it was: every file and its ledger row straight into public. */
async function installLegacyLayout(target: LegacyTarget): Promise<void> {
  await target.exec(
    'CREATE TABLE postroom_migrations (version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  for (const file of readMigrations().filter((m) => m.version <= LEGACY_VERSIONS)) {
    await target.exec(file.sql);
    await target.query('INSERT INTO postroom_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
      file.version,
      file.name,
      createHash('sha256').update(file.sql).digest('hex'),
    ]);
  }
  await target.exec(LEGACY_ROWS);
}

type Rows = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

async function tableCounts(rows: Rows, schema: string): Promise<Record<string, number>> {
  const names = await rows(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`,
    [schema],
  );
  const out: Record<string, number> = {};
  for (const { table_name: name } of names)
    out[name as string] = (await rows(`SELECT count(*)::int AS n FROM ${schema}."${name as string}"`))[0]!.n as number;
  return out;
}

const rowsOf =
  (db: Db): Rows =>
  async (sql, params) =>
    (await db.query(sql, params)).rows;

/** Opens a store of the kind the old way, and the new way on the same data. */
async function legacyPair(kind: StoreKind): Promise<{ legacy: () => Promise<LegacyTarget>; open: (schema?: string) => Promise<Db> }> {
  if (kind === 'postgres') {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    return {
      async legacy() {
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        return {
          exec: async (sql) => void (await client.query(sql)),
          query: async (sql, params) => (await client.query(sql, params)).rows,
          close: () => client.end(),
        };
      },
      async open(schema) {
        const db = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger(), ...(schema ? { schema } : {}) });
        cleanups.push(() => db.close());
        return db;
      },
    };
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-schema-'));
  cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  return {
    async legacy() {
      const lite = await PGlite.create(path.join(dataDir, 'pgdata'));
      return {
        exec: async (sql) => void (await lite.exec(sql)),
        query: async (sql, params) => (await lite.query(sql, params)).rows as never,
        close: () => lite.close(),
      };
    },
    async open(schema) {
      const db = await createPgliteDb({ dataDir, ...(schema ? { schema } : {}) });
      cleanups.push(() => db.close());
      return db;
    },
  };
}

describe.each(await availableStoreKinds())('own schema on %s', (kind) => {
  it('moves an installation whose tables are in public into the postroom schema without losing a row', async () => {
    const pair = await legacyPair(kind);
    const legacy = await pair.legacy();
    await installLegacyLayout(legacy);
    const before = await tableCounts(legacy.query, 'public');
    await legacy.close();
    // Every table the old layout had holds rows, so "no row lost" covers every table.
    expect(Object.keys(before).sort()).toEqual(
      [
        'correspondence_projection',
        'endpoint_secrets',
        'inbox',
        'participant_projection',
        'postroom_migrations',
        'reconcile_gaps',
        'reconcile_runs',
        'reconcile_watermarks',
        'sent_correspondence',
        'webhook_endpoints',
      ].sort(),
    );
    for (const n of Object.values(before)) expect(n).toBeGreaterThan(0);

    const db = await pair.open();
    const { applied } = await migrate(db, { logger: silentLogger() });
    // Only the migrations the old layout had not applied run after the move.
    expect(applied.map((m) => m.version)).toEqual(
      readMigrations()
        .filter((m) => m.version > LEGACY_VERSIONS)
        .map((m) => m.version),
    );

    const after = await tableCounts(rowsOf(db), 'postroom');
    for (const [table, n] of Object.entries(before))
      expect(after[table], table).toBe(table === 'postroom_migrations' ? readMigrations().length : n);
    expect(await tableCounts(rowsOf(db), 'public')).toEqual({});

    // Unqualified queries reach the moved rows, and identity sequences moved with their tables.
    const inbox = await db.query<{ event_id: string; payload: unknown }>('SELECT event_id, payload FROM inbox ORDER BY event_id');
    expect(inbox.rows).toEqual([
      { event_id: 'evt_legacy_1', payload: { a: 1 } },
      { event_id: 'evt_legacy_2', payload: {} },
    ]);
    await db.query(`INSERT INTO reconcile_runs (outcome) VALUES ('clean')`);
    const runs = await db.query<{ run_id: string }>('SELECT run_id::text FROM reconcile_runs ORDER BY run_id');
    expect(runs.rows.map((r) => r.run_id)).toEqual(['1', '2']);
    const seq = await db.query<{ schema: string }>(
      `SELECT schemaname AS schema FROM pg_sequences WHERE sequencename LIKE 'reconcile_runs%'`,
    );
    expect(seq.rows).toEqual([{ schema: 'postroom' }]);

    // Idempotent: a second run finds nothing to move and nothing to apply.
    expect((await migrate(db)).applied).toEqual([]);
  });

  it("leaves an embedder's own public.inbox and public.webhook_endpoints alone on a fresh install", async () => {
    const pair = await legacyPair(kind);
    const embedder = await pair.legacy();
    await embedder.exec(`CREATE TABLE inbox (id serial PRIMARY KEY, note text NOT NULL); INSERT INTO inbox (note) VALUES ('mine');
      CREATE TABLE webhook_endpoints (name text PRIMARY KEY); INSERT INTO webhook_endpoints VALUES ('theirs');
      CREATE TABLE webhook_endpoints_audit (note text);`);
    await embedder.close();

    const db = await pair.open();
    await migrate(db);
    await db.query(`INSERT INTO inbox (event_id, type, received_at) VALUES ('evt_1', 'correspondence.created', now())`);
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox')).rows[0]!.n).toBe(1);
    // A handler's ctx.tx still reaches the application's other tables unqualified.
    await db.transaction((tx) => tx.query(`INSERT INTO webhook_endpoints_audit (note) VALUES ('from a handler')`));
    expect((await db.query('SELECT note FROM public.webhook_endpoints_audit')).rows).toEqual([{ note: 'from a handler' }]);
    expect((await db.query<{ note: string }>('SELECT note FROM public.inbox')).rows).toEqual([{ note: 'mine' }]);
    expect((await db.query<{ name: string }>('SELECT name FROM public.webhook_endpoints')).rows).toEqual([{ name: 'theirs' }]);
    const cols = await db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'inbox' ORDER BY ordinal_position`,
    );
    expect(cols.rows.map((c) => c.column_name)).toEqual(['id', 'note']);
  });
});

describe.skipIf(!(await availableStoreKinds()).includes('postgres'))('configurable schema (Postgres)', () => {
  it('keeps two installations in one database apart', async () => {
    const pair = await legacyPair('postgres');
    const a = await pair.open('hooks_a');
    const b = await pair.open('hooks_b');
    await migrate(a);
    await migrate(b);
    await a.query(`INSERT INTO inbox (event_id, type, received_at) VALUES ('evt_a', 'correspondence.created', now())`);
    expect((await b.query('SELECT * FROM inbox')).rows).toEqual([]);
    expect((await a.query<{ event_id: string }>('SELECT event_id FROM inbox')).rows).toEqual([{ event_id: 'evt_a' }]);
  });
});

describe('schema settings', () => {
  it('defaults to postroom and reads POSTROOM_DB_SCHEMA', () => {
    expect(loadConfig({}).database.schema).toBe('postroom');
    expect(loadConfig({ POSTROOM_DB_SCHEMA: 'hooks' }).database.schema).toBe('hooks');
  });

  it.each(['public', 'Hooks', 'pg_x', '1abc', 'a;drop', 'a'.repeat(64)])('refuses %s', (schema) => {
    expect(() => loadConfig({ POSTROOM_DB_SCHEMA: schema })).toThrow(/POSTROOM_DB_SCHEMA/);
    expect(() => createPgDb({ url: 'postgres://x@127.0.0.1/x', poolSize: 1, logger: silentLogger(), schema })).toThrow(
      expect.objectContaining({ code: 'db_schema_invalid' }),
    );
  });

  it('finds what each migration creates, renames included', () => {
    expect(
      objectsCreatedBy(`-- CREATE TABLE not_this\nCREATE TABLE IF NOT EXISTS a (x int); create unlogged table "Mixed" (y int);
      CREATE VIEW v AS SELECT 1; CREATE TYPE mood AS ENUM ('x'); CREATE OR REPLACE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql;
      ALTER TABLE a RENAME TO b; CREATE SEQUENCE s; CREATE INDEX i ON a (x);`),
    ).toEqual([
      { kind: 'relation', name: 'a' },
      { kind: 'relation', name: 'Mixed' },
      { kind: 'relation', name: 's' },
      { kind: 'relation', name: 'v' },
      { kind: 'relation', name: 'b' },
      { kind: 'type', name: 'mood' },
      { kind: 'function', name: 'f' },
    ]);
  });
});
