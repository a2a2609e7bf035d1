import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDb } from '../../src/db/open.js';
import { createPgDb } from '../../src/db/pg.js';
import { createInboxWriter } from '../../src/inbox/group-commit.js';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { claimBatch } from '../../src/worker/claim-queries.js';
import { named } from '../../src/db/statement.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { PostroomError } from '../../src/errors.js';
import { silentLogger } from '../../src/logging/logger.js';
import { adminUrl, createPostgresDatabase, openTestStore } from '../support/db.js';

/**
 * named() statements are parsed and planned once per connection: the server
 * keeps them (pg_prepared_statements) between batches. Where that cannot be
 * relied on (the application's pool, a pooler that drops them) they are sent
 * as plain statements, or fail with an error that says what to set.
 */
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const PROBE = named('probe', 'SELECT $1::int + 1 AS n');

/** What the connection running `tx` has prepared, by name. */
async function preparedOn(tx: Queryable): Promise<string[]> {
  return (await tx.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);
}

async function runTwice(db: Db): Promise<string[]> {
  return db.transaction(async (tx) => {
    expect((await tx.query<{ n: number }>(PROBE, [1])).rows).toEqual([{ n: 2 }]);
    expect((await tx.query<{ n: number }>(PROBE, [41])).rows).toEqual([{ n: 42 }]);
    return preparedOn(tx);
  });
}

describe.skipIf(!(await adminUrl()))('prepared statements on Postgres', () => {
  it('are kept by the connection, under a name that carries a hash of their text', async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
    cleanups.push(() => db.close());
    expect(PROBE.name).toMatch(/^postroom_probe_[0-9a-f]{10}$/);
    expect(named('probe', 'SELECT $1::int + 2 AS n').name).not.toBe(PROBE.name);
    expect(await runTwice(db)).toEqual([PROBE.name]);
  });

  it('are plain statements with POSTROOM_DB_PREPARED_STATEMENTS=off', async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const config = loadConfig({ DATABASE_URL: database.url, POSTROOM_DB_PREPARED_STATEMENTS: 'off' });
    expect(config.database.preparedStatements).toBe(false);
    const db = await openDb(config, silentLogger(), { poolSize: 1 });
    cleanups.push(() => db.close());
    expect(await runTwice(db)).toEqual([]);
    expect(() => loadConfig({ DATABASE_URL: database.url, POSTROOM_DB_PREPARED_STATEMENTS: 'maybe' })).toThrow(
      /POSTROOM_DB_PREPARED_STATEMENTS/,
    );
    expect(loadConfig({ DATABASE_URL: database.url }).database.preparedStatements).toBe(true);
  });

  it("are plain statements on the application's own pool, whose connections postroom does not own", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    cleanups.push(() => pool.end());
    const db = createPgDb({ pool, logger: silentLogger() });
    expect(await runTwice(db)).toEqual([]);
  });

  it('are prepared on the bounded path too (queryWithin), which the ingress flush takes', async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
    cleanups.push(() => db.close());
    expect((await db.queryWithin<{ n: number }>(5000, PROBE, [1])).rows).toEqual([{ n: 2 }]);
    expect((await db.queryWithin<{ n: number }>(5000, PROBE, [2])).rows).toEqual([{ n: 3 }]);
    expect(await preparedOn(db)).toEqual([PROBE.name]);
    // The pooler's case on this path gets the same error as everywhere else.
    await db.exec('DEALLOCATE ALL');
    expectUnsupported(
      await db.queryWithin(5000, PROBE, [1]).then(
        () => undefined,
        (e: unknown) => e,
      ),
      '26000',
    );
  });

  it('include the ingress flush: its statement is planned once per connection, not once per flush', async () => {
    const store = await openTestStore('postgres', { poolSize: 1 });
    cleanups.push(store.cleanup);
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 10, flushTimeoutMs: 5000 });
    const row = (id: string) =>
      inboxRowFromEnvelope({ event_id: id, type: 'participant.acted', at: '2026-11-24T20:00:00Z', data: {} }, 'webhook');
    expect(await writer.submit(row('evt_prepared_1'))).toBe('accepted');
    expect(await writer.submit(row('evt_prepared_2'))).toBe('accepted');
    expect(await writer.submit(row('evt_prepared_1'))).toBe('duplicate');
    await writer.close();
    // The ingress flush on Postgres takes its ids' locks (flush-locks.ts): the locked variant.
    expect(await preparedOn(store.db)).toEqual([expect.stringMatching(/^postroom_insert_batch_locked_[0-9a-f]{10}$/)]);
  });

  it('include the claim, which the connection stops planning after its first five runs', async () => {
    const store = await openTestStore('postgres', { poolSize: 1 });
    cleanups.push(store.cleanup);
    await insertInboxBatch(
      store.db,
      Array.from({ length: 40 }, (_, i) =>
        inboxRowFromEnvelope(
          {
            event_id: `evt_claim_plan_${i}`,
            type: 'participant.acted',
            at: new Date(Date.UTC(2026, 10, 24, 20, 0, i)).toISOString(),
            data: { correspondence_id: `cor_${i}`, participant_id: 'p', act: 'read', ref: 'r' },
          },
          'webhook',
        ),
      ),
    );
    for (let i = 0; i < 8; i++) {
      const batch = await claimBatch(store.db, { workerId: 'w', limit: 5, orderingHoldSeconds: 300 });
      expect(batch?.events.length).toBeGreaterThan(0);
    }
    // With the limit and the hold as parameters, Postgres planned every claim afresh on an inbox of 30,000 rows, where
    // its plan for an unknown LIMIT looked dearer. Written into the text, only the worker's id is a parameter: Postgres
    // plans the first five runs for their value, as for any statement with parameters, then keeps one plan.
    const plans = await store.db.query<{ name: string; generic_plans: string; custom_plans: string }>(
      `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'postroom_claim_%'`,
    );
    expect(plans.rows.map((r) => ({ generic: Number(r.generic_plans), custom: Number(r.custom_plans) }))).toEqual([
      { generic: 3, custom: 5 },
    ]);
  });

  /** Runs `body` in a transaction of postroom's own pool and returns what it failed with. */
  async function failureOf(body: (tx: Queryable) => Promise<void>): Promise<unknown> {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
    cleanups.push(() => db.close());
    return db.transaction(body).then(
      () => undefined,
      (e: unknown) => e,
    );
  }

  function expectUnsupported(err: unknown, sqlstate: string): void {
    expect(err).toBeInstanceOf(PostroomError);
    expect((err as PostroomError).code).toBe('db_prepared_statements_unsupported');
    expect((err as Error).message).toMatch(/POSTROOM_DB_PREPARED_STATEMENTS=off/);
    expect(((err as Error).cause as { code?: string }).code).toBe(sqlstate);
  }

  it('that the server lost fail with an error naming the setting to change', async () => {
    // What a pooler in transaction mode without statement tracking does: the next use finds another server session.
    const err = await failureOf(async (tx) => {
      await tx.query(PROBE, [1]);
      await tx.exec('DEALLOCATE ALL');
      await tx.query(PROBE, [1]);
    });
    expectUnsupported(err, '26000');
  });

  it('that the server already holds under that name (from another client) fail with the same error', async () => {
    // The pooler's other case: this client's first use lands on a server session where the name is taken.
    const err = await failureOf(async (tx) => {
      await tx.exec(`PREPARE ${PROBE.name} AS SELECT 1`);
      await tx.query(PROBE, [1]);
    });
    expectUnsupported(err, '42P05');
  });
});
