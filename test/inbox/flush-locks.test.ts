import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventInFlightError, flushLockSeed } from '../../src/inbox/flush-locks.js';
import { createInboxWriter } from '../../src/inbox/group-commit.js';
import { insertFlush } from '../../src/inbox/insert-queries.js';
import type { NewInboxEvent } from '../../src/inbox/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
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

  it('keys ids by schema: two installations in one database do not hold each other', () => {
    const a = flushLockSeed('postroom');
    const b = flushLockSeed('postroom_other');
    expect([a.high, a.low]).not.toEqual([b.high, b.low]);
  });
});
