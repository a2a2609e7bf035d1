import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { createPgDb } from '../../src/db/pg.js';
import { migrate } from '../../src/db/migrate.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const pg = await adminUrl();

// Needs a real server to cut connections to; the embedded store has no network hop.
describe.skipIf(!pg)('ingress when the store is cut off (Postgres behind a TCP proxy)', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let db: Db;
  let direct: Db;
  let server: RunningServer;
  let hook: string;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    const u = new URL(database.url);
    proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
    db = createPgDb({ url: proxy.url(database.url), poolSize: 2, logger: silentLogger(), connectTimeoutMs: 500 });
    direct = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
    await migrate(direct);
    server = await startReceiver({ db, env: { POSTROOM_ACK_TIMEOUT_MS: '1500' } });
    hook = `${server.url}/webhooks`;
  });
  afterAll(async () => {
    await server?.close();
    await db?.close();
    await direct?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 with Retry-After while the store is gone, and stores the retry exactly once after', async () => {
    const before = makeEvent();
    expect((await postEvent(hook, before, { secret: TEST_SECRET })).status).toBe(200);

    proxy.cut();
    const during = makeEvent();
    const refused = await postEvent(hook, during, { secret: TEST_SECRET });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(refused.body.error?.code).toBe('store_unavailable');
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    // Metrics stay scrapeable while the store is gone, and say so.
    const scrape = await fetch(`${server.url}/metrics`);
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/^postroom_store_up 0$/m);

    proxy.restore();
    // The sender retries until the store answers again; the first 2xx means it is stored.
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) {
      status = (await postEvent(hook, during, { secret: TEST_SECRET })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(200);
    expect((await postEvent(hook, during, { secret: TEST_SECRET })).body.status).toBe('duplicate');
    const rows = await direct.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE event_id = ANY($1::text[])', [
      [before.event_id, during.event_id],
    ]);
    expect(rows.rows.map((r) => r.event_id).sort()).toEqual([before.event_id, during.event_id].sort());
  });

  it('never answers 2xx for an event that is not stored, under concurrent load across a cut', async () => {
    const events = Array.from({ length: 120 }, () => makeEvent());
    const posting = events.map(async (e, i) => {
      await new Promise((r) => setTimeout(r, i * 5));
      return postEvent(hook, e, { secret: TEST_SECRET });
    });
    setTimeout(() => proxy.cut(), 150);
    setTimeout(() => proxy.restore(), 450);
    const results = await Promise.all(posting);
    const acked = events.filter((_, i) => results[i]!.status === 200).map((e) => e.event_id);
    const refused = results.filter((r) => r.status === 503).length;
    expect(acked.length + refused).toBe(events.length);
    const stored = await direct.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE event_id = ANY($1::text[])', [acked]);
    expect(stored.rows.length).toBe(acked.length);
  });

  it('answers 503 when the store is slower than the ack budget, and the retry after it catches up is stored once', async () => {
    // Another session holds the inbox table: the insert waits, past POSTROOM_ACK_TIMEOUT_MS (1.5 s here).
    const blocker = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
    const e = makeEvent();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const locking = blocker.transaction(async (tx) => {
      await tx.query('LOCK TABLE inbox IN ACCESS EXCLUSIVE MODE');
      await held;
    });
    try {
      // Wait until the lock is really held (a fixed sleep lost the race on a loaded machine).
      for (let i = 0; i < 100; i++) {
        const held = await direct.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'inbox'::regclass AND mode = 'AccessExclusiveLock' AND granted`,
        );
        if (held.rows[0]!.n > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const slow = await postEvent(hook, e, { secret: TEST_SECRET });
      expect(slow.status).toBe(503);
      expect(slow.headers['retry-after']).toBeDefined();
    } finally {
      release();
      await locking;
      await blocker.close();
    }
    // The write that timed out may still commit once the lock is gone, or not: its connection was
    // abandoned, and whether Postgres finishes the statement before it notices depends on the statement
    // (a COPY and the NOTIFY after it, or one INSERT). Either way the sender's retry is answered 200 and
    // the event is stored once.
    let retry = await postEvent(hook, e, { secret: TEST_SECRET });
    for (let i = 0; i < 20 && retry.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      retry = await postEvent(hook, e, { secret: TEST_SECRET });
    }
    expect(retry.status).toBe(200);
    expect(['accepted', 'duplicate']).toContain((retry.body as { status: string }).status);
    const rows = await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = $1', [e.event_id]);
    expect(rows.rows[0]!.n).toBe(1);
  });
});
