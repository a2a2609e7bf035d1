import pg from 'pg';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPgDb } from '../../src/db/pg.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { adminUrl, createPostgresDatabase } from '../support/db.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe.skipIf(!(await adminUrl()))("postroom on the application's own pg.Pool", () => {
  it("works through the pool, leaves the application's search_path and tables alone, and never ends the pool", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    // One connection: postroom and the application necessarily take turns on the same session.
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    cleanups.push(() => pool.end());
    await pool.query(
      `CREATE SCHEMA app; CREATE TABLE app.inbox (note text); INSERT INTO app.inbox VALUES ('mine'); CREATE TABLE app.orders (event_id text)`,
    );
    await pool.query('SET search_path TO app, public');

    const db = createPgDb({ pool, logger: silentLogger() });
    await migrate(db);
    await db.query(`INSERT INTO inbox (event_id, type, received_at) VALUES ('evt_1', 'correspondence.created', now())`);
    await db.transaction(async (tx) => {
      await tx.query(`UPDATE inbox SET status = 'processed' WHERE event_id = 'evt_1'`);
      // What a handler does through ctx.tx: the application's tables by the names it always used.
      await tx.query(`INSERT INTO orders (event_id) VALUES ('evt_1')`);
    });
    const locked = await db.withAdvisoryLock('test', (session) => session.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox'));
    expect(locked).toEqual({ acquired: true, value: { rows: [{ n: 1 }], rowCount: 1 } });
    await expect(db.query('SELECT no_such_column FROM inbox')).rejects.toThrow(/no_such_column/);

    // The application's session is as it left it.
    expect((await pool.query('SHOW search_path')).rows[0].search_path).toBe('app, public');
    expect((await pool.query('SELECT note FROM inbox')).rows).toEqual([{ note: 'mine' }]);
    expect((await pool.query(`SELECT status FROM postroom.inbox`)).rows).toEqual([{ status: 'processed' }]);
    expect((await pool.query('SELECT event_id FROM orders')).rows).toEqual([{ event_id: 'evt_1' }]);

    // Notifications arrive on a connection of postroom's own, made with the pool's settings.
    const got: string[] = [];
    const unlisten = await db.listen('postroom_test', (p) => got.push(p));
    await db.notify('postroom_test', 'hello');
    for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual(['hello']);
    await unlisten();

    await db.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(pool.ended).toBe(false);
  });
});

describe("metrics on the application's prom-client registry", () => {
  it("registers postroom's series beside the application's own, without registering Node's defaults twice", async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    new Counter({ name: 'app_orders_total', help: 'orders', registers: [registry] }).inc();
    const metrics = createMetrics({ registry, version: '1.2.3' });
    expect(metrics.registry).toBe(registry);
    metrics.ingressRequests.inc({ outcome: 'accepted', reason: '' });
    const text = await registry.metrics();
    expect(text).toMatch(/^app_orders_total 1$/m);
    expect(text).toMatch(/^postroom_build_info\{version="1.2.3",.*\} 1$/m);
    expect(text).toMatch(/^postroom_ingress_requests_total\{outcome="accepted",reason=""\} 1$/m);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
  });

  it('keeps a registry of its own when given none', async () => {
    const a = createMetrics();
    const b = createMetrics();
    expect(a.registry).not.toBe(b.registry);
    expect(await a.registry.metrics()).toMatch(/postroom_build_info/);
  });
});
