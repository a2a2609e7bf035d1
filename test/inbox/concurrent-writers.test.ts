import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import type { Db } from '../../src/db/types.js';
import { INGRESS_DEFAULTS } from '../../src/ingress/defaults.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { envelope, toRow } from '../worker/support.js';

/*
 * Two ingress replicas flush at the same moment whenever the service retries a
 * delivery whose first attempt is still waiting on a slow commit: their flushes
 * then share event ids, in whatever order each replica received them. Each
 * replica is its own pool here, as in production. Postgres only: PGlite is one
 * connection, so its writers never overlap.
 */
const onPostgres = (await availableStoreKinds()).includes('postgres');

const event = (id: string) => toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-18T10:15:00Z', id));
const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `evt_${prefix}_${randomUUID()}_${i}`);

describe.runIf(onPostgres)('writers of the same event ids at once (two replicas)', () => {
  let store: TestStore;
  let replicaA: Db;
  let replicaB: Db;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    replicaA = createPgDb({ url: store.url!, poolSize: 2, logger: silentLogger(), connectTimeoutMs: 2000 });
    replicaB = createPgDb({ url: store.url!, poolSize: 2, logger: silentLogger(), connectTimeoutMs: 2000 });
    // Connected and prepared, as a running replica is: otherwise the first flush is done before the second connects.
    for (const replica of [replicaA, replicaB]) await insertInboxBatch(replica, ids('warm', 1).map(event));
  });
  afterAll(async () => {
    await replicaA?.close();
    await replicaB?.close();
    await store?.cleanup();
  });

  async function count(list: readonly string[]): Promise<number> {
    const r = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [list]);
    return r.rows[0]!.n;
  }

  /** Resolves once replica B's backend waits on a lock, that is on A's uncommitted copy of an id. */
  async function untilBWaits(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const r = await store.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO inbox%'`,
      );
      if (r.rows[0]!.n > 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('replica B never waited on replica A');
  }

  for (const outcome of ['commits', 'rolls back'] as const) {
    it(`waits for a copy not yet committed, then skips it if that flush ${outcome === 'commits' ? 'commits' : 'rolls back, writes it'}`, async () => {
      const [x, y, z] = ids(outcome.replace(' ', '_'), 3);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let written!: () => void;
      const insertDone = new Promise<void>((r) => (written = r));
      const first = replicaA
        .transaction(async (tx) => {
          const inserted = await insertInboxBatch(tx, [event(x!), event(y!)]);
          written();
          await held;
          if (outcome === 'rolls back') throw new Error('the flush fails after its insert');
          return inserted;
        })
        .catch((err: Error) => err);
      // A's insert is in before B starts; its transaction then stays open until released.
      await Promise.race([insertDone, first]);
      const second = insertInboxBatch(replicaB, [event(y!), event(z!)]);
      try {
        await untilBWaits();
      } finally {
        // Released either way, so a failed wait fails this test instead of holding A's transaction open.
        release();
      }

      if (outcome === 'commits') {
        expect(await first).toEqual(new Set([x, y]));
        expect(await second).toEqual(new Set([z]));
        expect(await count([x!, y!, z!])).toBe(3);
      } else {
        expect(await first).toBeInstanceOf(Error);
        expect(await second).toEqual(new Set([y, z]));
        expect(await count([x!, y!, z!])).toBe(2);
      }
    });
  }

  it('flushes that share ids in opposite orders all commit: no deadlock, every id once', async () => {
    // Without one order for every flush, each replica's flush writes its first half, then waits on the other's:
    // Postgres breaks that deadlock after deadlock_timeout by failing one flush, and its whole batch is answered 503.
    // Full flushes of the default size, twelve times: without the one order, six rounds deadlock at least once in most runs.
    for (let round = 0; round < 12; round++) {
      const shared = ids(`order_${round}`, INGRESS_DEFAULTS.maxBatch);
      const results = await Promise.allSettled([
        insertInboxBatch(replicaA, shared.map(event)),
        insertInboxBatch(replicaB, [...shared].reverse().map(event)),
      ]);
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as { code?: string }).code ?? String(r.reason)] : []));
      expect(failures, `round ${round}`).toEqual([]);
      const [a, b] = results.map((r) => (r as PromiseFulfilledResult<Set<string>>).value);
      // Each id was written by exactly one of the two, and is in the inbox once.
      expect([...a!].filter((id) => b!.has(id))).toEqual([]);
      expect(a!.size + b!.size).toBe(shared.length);
      expect(await count(shared)).toBe(shared.length);
    }
  });
});
