import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import type { Db } from '../../src/db/types.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { silentLogger } from '../../src/logging/logger.js';
import { adminUrl, availableStoreKinds, createPostgresDatabase, openTestStore, type TestDatabase, type TestStore } from '../support/db.js';

const pgUrl = await adminUrl();
const hasSs = (() => {
  try {
    execFileSync('ss', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.each(await availableStoreKinds())('queryWithin on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind, { migrate: false });
  });
  afterAll(async () => store?.cleanup());

  it('answers like query when the store is quick, and gives up with store_unavailable when it is not', async () => {
    expect((await store.db.queryWithin<{ n: number }>(5000, 'SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    // PGlite runs a statement synchronously on this thread: no timer can interrupt it, so only Postgres is asked to wait here.
    if (kind === 'postgres') {
      const slow = await store.db.queryWithin(100, 'SELECT pg_sleep(1.5)').catch((e: unknown) => e);
      expect(slow).toBeInstanceOf(StoreUnavailableError);
    }
    expect((await store.db.queryWithin<{ n: number }>(5000, 'SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
  });
});

describe.skipIf(!pgUrl)('Postgres pool time-outs', () => {
  let database: TestDatabase;
  let admin: pg.Client;
  const app = `postroom_t_${randomBytes(4).toString('hex')}`;
  let db: Db;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    db = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger(), applicationName: app, statementTimeoutMs: 300 });
  });
  afterAll(async () => {
    await db?.close();
    await admin?.end();
    await database?.drop();
  });

  const backends = async (): Promise<number[]> =>
    (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])).rows.map((r) => r.pid);

  it('an abandoned statement takes its connection with it: the backend goes away and the next statement runs on another', async () => {
    const before = (await db.queryWithin<{ pid: number }>(2000, 'SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    // pg_sleep of 250 ms stays under the server's 300 ms statement time-out: only the client gives up here.
    await expect(db.queryWithin(50, 'SELECT pg_backend_pid(), pg_sleep(0.25)')).rejects.toBeInstanceOf(StoreUnavailableError);
    const after = (await db.queryWithin<{ pid: number }>(2000, 'SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    let alive = await backends();
    for (let i = 0; i < 50 && alive.length > 1; i++) {
      await new Promise((r) => setTimeout(r, 50));
      alive = await backends();
    }
    // Only the connection the last statement used is left; the abandoned one was closed, not pooled.
    expect(alive).toEqual([after]);
    expect([before, after]).toContain(after);
  });

  it('every pooled connection carries a statement time-out and TCP keepalive; lock sessions are exempt and reset', async () => {
    await expect(db.query('SELECT pg_sleep(1)')).rejects.toMatchObject({ code: '57014' });
    expect((await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout).toBe('300ms');
    const locked = await db.withAdvisoryLock('time-outs-test', async (session) => {
      await session.query('SELECT pg_sleep(0.5)');
      return session.transaction(async (tx) => (await tx.query<{ ok: boolean }>('SELECT true AS ok FROM pg_sleep(0.4)')).rows[0]!.ok);
    });
    expect(locked).toEqual({ acquired: true, value: true });
    for (let i = 0; i < 4; i++)
      expect((await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout).toBe('300ms');
  });

  it.skipIf(!hasSs)('pooled sockets have TCP keepalive on (the kernel shows a keepalive timer)', async () => {
    await db.query('SELECT 1');
    const ports = (
      await admin.query<{ port: number }>('SELECT client_port AS port FROM pg_stat_activity WHERE application_name = $1', [app])
    ).rows.map((r) => r.port);
    expect(ports.length).toBeGreaterThan(0);
    for (const port of ports) {
      const line = execFileSync('ss', ['-tno', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' });
      expect(line).toMatch(/timer:\(keepalive/);
    }
  });
});
