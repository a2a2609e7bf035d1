import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventInFlightError, flushLockSeed } from '../../src/inbox/flush-locks.js';
import { createInboxWriter } from '../../src/inbox/group-commit.js';
import { insertFlush } from '../../src/inbox/insert-queries.js';
import type { NewInboxEvent } from '../../src/inbox/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openBackendLike, openTestStore, type TestStore } from '../support/db.js';
import { envelope, toRow } from '../worker/support.js';

/*
 * A flush that hangs holds its ids uncommitted. Another flush with one of those ids (the service's redelivery)
 * must skip it and answer it at once, never wait for it, and write the rest. Postgres only: PGlite is one
 * connection, so no two flushes ever overlap there.
 */
const onPostgres = (await availableStoreKinds()).includes('postgres');

const event = (id: string): NewInboxEvent =>
  toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-12-01T10:00:00Z', id));
const newId = (): string => `evt_lock_${randomUUID()}`;

describe.runIf(onPostgres)('flush locks: an id another flush holds is skipped, not waited for', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 4 });
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  /** Runs `during` while another transaction holds `held` as a flush does (its lock and its uncommitted row), then ends it. */
  async function whileHeld(held: string, end: 'commit' | 'rollback', during: () => Promise<void>): Promise<void> {
    const ROLLBACK = new Error('rollback');
    await store.db
      .transaction(async (tx) => {
        const { inserted } = await insertFlush(tx, [event(held)], flushLockSeed(store.db.schema));
        expect([...inserted]).toEqual([held]);
        await during();
        if (end === 'rollback') throw ROLLBACK;
      })
      .catch((err: unknown) => {
        if (err !== ROLLBACK) throw err;
      });
  }

  // Received events only, and with a quarantined row (the writer keeps a row it could not parse as such).
  for (const path of ['received', 'with a quarantined row'] as const) {
    for (const end of ['commit', 'rollback'] as const) {
      it(`${path}: answers the held id EventInFlightError and writes the rest; after the holder's ${end}, its redelivery is ${end === 'commit' ? 'a duplicate' : 'accepted'}`, async () => {
        const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 16, flushTimeoutMs: 30_000, stallMs: 10_000 });
        const held = newId();
        const free = newId();
        const other: NewInboxEvent =
          path === 'received' ? event(newId()) : { ...event(newId()), status: 'quarantined', lastError: 'test: not an event' };
        await whileHeld(held, end, async () => {
          // The first row is flushed alone; the held one and the other share the next flush.
          const outcomes = await Promise.allSettled([writer.submit(event(free)), writer.submit(event(held)), writer.submit(other)]);
          expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: expect.any(EventInFlightError) as unknown });
          expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'event_in_flight' });
          expect([outcomes[0], outcomes[2]]).toEqual([
            { status: 'fulfilled', value: 'accepted' },
            { status: 'fulfilled', value: 'accepted' },
          ]);
        });
        expect(await writer.submit(event(held))).toBe(end === 'commit' ? 'duplicate' : 'accepted');
        const rows = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = $1', [held]);
        expect(rows.rows[0]!.n).toBe(1);
        await writer.close();
      });
    }
  }

  /** Holds a flush of one new id open (as a backend stopped after its statement would), runs `during`, rolls back. */
  async function whileFlushOpen(during: (holderPid: number) => Promise<void>): Promise<void> {
    const ROLLBACK = new Error('rollback');
    await store.db
      .transaction(async (tx) => {
        await insertFlush(tx, [event(newId())], flushLockSeed(store.db.schema));
        const pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await during(pid);
        throw ROLLBACK;
      })
      .catch((err: unknown) => {
        if (err !== ROLLBACK) throw err;
      });
  }

  /** A flush of a new id on a new backend (of a pid congruent to `pid` modulo 16, if given) is written, not held up. */
  async function flushesOnAnotherBackend(pid: number | undefined): Promise<void> {
    const other = await openBackendLike(store.url!, pid);
    try {
      const id = newId();
      const { inserted } = await insertFlush(other, [event(id)], flushLockSeed(store.db.schema));
      expect([...inserted]).toEqual([id]);
    } finally {
      await other.close();
    }
  }

  it('a flush held open after its statement holds up no flush of other ids, whatever backend runs it', async () => {
    await whileFlushOpen((holderPid) => flushesOnAnotherBackend(holderPid));
  });

  it("a flush held open while it prunes old per-minute counts holds up no other flush's pruning", async () => {
    // Counts older than three days: the first flush of a new minute on a backend prunes them.
    // No counts of this hour yet: the held flush is the first of its minute and prunes, as is the other one.
    await store.db.query(`DELETE FROM inbox_minutes WHERE minute >= now() - interval '1 hour'`);
    await store.db.query(
      `INSERT INTO inbox_minutes (minute, kind, shard, n)
       SELECT date_trunc('minute', now() - interval '4 days') - make_interval(mins => s), 'received', 0, 1
       FROM generate_series(0, 9) AS s`,
    );
    await whileFlushOpen(() => flushesOnAnotherBackend(undefined));
    // The held flush rolled back its pruning, and the other skipped the rows it held: the next first flush of a
    // minute prunes them.
    const old = `SELECT count(*)::int AS n FROM inbox_minutes WHERE minute < now() - interval '3 days'`;
    expect((await store.db.query<{ n: number }>(old)).rows[0]!.n).toBe(10);
    await store.db.query(`DELETE FROM inbox_minutes WHERE minute >= now() - interval '1 hour'`);
    await insertFlush(store.db, [event(newId())], flushLockSeed(store.db.schema));
    expect((await store.db.query<{ n: number }>(old)).rows[0]!.n).toBe(0);
  });

  it('keys ids by schema: two installations in one database do not hold each other', () => {
    const a = flushLockSeed('postroom');
    const b = flushLockSeed('postroom_other');
    expect([a.high, a.low]).not.toEqual([b.high, b.low]);
  });
});
