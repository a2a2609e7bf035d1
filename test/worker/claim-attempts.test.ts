import { afterAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import { migrate } from '../../src/db/migrate.js';
import { getReplayCandidate } from '../../src/inbox/admin-queries.js';
import { inboxStats } from '../../src/inbox/count-queries.js';
import { getInboxEvent, listInbox } from '../../src/inbox/read-queries.js';
import { claimBatch, reapOrphanedAttempts } from '../../src/worker/claim-queries.js';
import { takeBatch } from '../../src/worker/complete-queries.js';
import type { Db, Sql } from '../../src/db/types.js';
import { decideReplay } from '../../src/worker/replay.js';
import { availableStoreKinds, createPastPartitions, openTestStore } from '../support/db.js';
import { insertBeforeLedger, migrationsBefore } from '../support/migrations.js';
import { envelope, inboxRow, insertEnvelopes, toRow } from './support.js';

/**
 * A claim records its attempt in one inbox_attempts row per batch instead of
 * rewriting every inbox row it takes (migration 008). What a 'processing' status
 * would promise holds all the same: the events are in nobody else's hands,
 * operators see them as processing, and replay leaves them alone.
 */

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const acted = (cid: string, second: number, id?: string) =>
  envelope(
    'participant.acted',
    { correspondence_id: cid, participant_id: 'p', act: 'read', ref: 'r' },
    new Date(Date.UTC(2026, 0, 1, 0, 0, second)),
    id,
  );

/**
 * The store as a claim sees it, except that a transaction, once its statements have run, resolves `ran` and waits
 * for `until` before it commits.
 */
function pausedBeforeCommit(db: Db, until: () => Promise<unknown>): { db: Pick<Db, 'transaction'>; ran: Promise<void> } {
  let ran!: () => void;
  const done = new Promise<void>((resolve) => (ran = resolve));
  return {
    db: {
      transaction: (fn) =>
        db.transaction(async (tx) => {
          const result = await fn(tx);
          ran();
          await until();
          return result;
        }),
    },
    ran: done,
  };
}

describe.each(await availableStoreKinds())('claims recorded in inbox_attempts (%s)', (kind) => {
  it('a claim rewrites no inbox row, yet its events are in no other claim, count as processing and cannot be replayed', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    const events = [acted('cor_a', 0), acted('cor_b', 1), acted('cor_c', 2)];
    await insertEnvelopes(store.db, events);
    const versions = async () =>
      (await store.db.query<{ event_id: string; ctid: string }>('SELECT event_id, ctid::text AS ctid FROM inbox ORDER BY event_id')).rows;
    const before = await versions();

    const claim = await claimBatch(store.db, { workerId: 'w1', limit: 10, orderingHoldSeconds: 300 });
    expect(claim!.events.map((e) => e.event_id)).toEqual(events.map((e) => e.event_id));
    expect(claim!.events.every((e) => e.attempts === 1)).toBe(true);
    // The same row versions: the claim wrote nothing to the inbox.
    expect(await versions()).toEqual(before);
    const attempts = await store.db.query<{ worker_id: string; event_ids: string[] }>('SELECT worker_id, event_ids FROM inbox_attempts');
    expect(attempts.rows).toHaveLength(1);
    expect(attempts.rows[0]!.worker_id).toBe('w1');
    expect([...attempts.rows[0]!.event_ids].sort()).toEqual(events.map((e) => e.event_id).sort());

    expect(await claimBatch(store.db, { workerId: 'w2', limit: 10, orderingHoldSeconds: 300 })).toBeUndefined();
    expect((await inboxStats(store.db)).by_status).toEqual({ processing: 3 });
    expect((await listInbox(store.db, { status: 'processing', limit: 10 })).map((r) => r.event_id).sort()).toEqual(
      events.map((e) => e.event_id).sort(),
    );
    expect(await listInbox(store.db, { status: 'received', limit: 10 })).toEqual([]);
    expect((await getInboxEvent(store.db, events[1]!.event_id))!.status).toBe('processing');
    const candidate = await getReplayCandidate(store.db, events[0]!.event_id);
    expect(decideReplay(candidate!)).toEqual({ action: 'refused', reason: 'it is being processed right now' });

    // A later event of a claimed correspondence waits for the batch to finish.
    const later = acted('cor_a', 5);
    await insertEnvelopes(store.db, [later]);
    expect(await claimBatch(store.db, { workerId: 'w2', limit: 10, orderingHoldSeconds: 300 })).toBeUndefined();
    const free = acted('cor_d', 6);
    await insertEnvelopes(store.db, [free]);
    expect((await claimBatch(store.db, { workerId: 'w2', limit: 10, orderingHoldSeconds: 300 }))!.events.map((e) => e.event_id)).toEqual([
      free.event_id,
    ]);
  });

  it('holds an event back behind an earlier runnable one that the batch does not include', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    // One correspondence: the first event is failing and waits to retry; the second arrived a moment ago, so it still
    // waits for the failing one; the third arrived long ago, so its hold on the failing event has run out, but the
    // second is received and must go first. Only the claim's check of its candidates against what is left out of them
    // sees that: its scan lets the third through, since nothing earlier is in a batch or backing off on its behalf.
    const [failing, recent, old] = [acted('cor_h', 0), acted('cor_h', 1), acted('cor_h', 2)];
    const free = acted('cor_free', 3);
    await insertEnvelopes(store.db, [failing, recent, old, free]);
    await store.db.query(
      `UPDATE inbox SET status = 'failed', attempts = 1, next_attempt_at = now() + interval '1 hour' WHERE event_id = $1`,
      [failing.event_id],
    );
    await createPastPartitions(store.db, 1);
    await store.db.query(`UPDATE inbox SET received_at = now() - interval '1 hour' WHERE event_id = $1`, [old.event_id]);

    const claim = await claimBatch(store.db, { workerId: 'w1', limit: 10, orderingHoldSeconds: 300 });
    expect(claim!.events.map((e) => e.event_id)).toEqual([free.event_id]);
  });

  it('concurrent claims: each batch row records exactly the events its claim returned, and no event is in two', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    // Each event has a correspondence of its own, or none: nothing holds another back, so each is claimable once.
    // Batches are not completed, so every one stays recorded for the comparison.
    const events = Array.from({ length: 240 }, (_, i) =>
      i % 3 === 0 ? envelope('delivery.failed', { reason: 'x' }, new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60))) : acted(`cor_${i}`, i % 60),
    );
    await insertEnvelopes(store.db, events);
    const returned = new Map<string, string[]>();
    const loop = async (worker: string): Promise<void> => {
      for (;;) {
        const claim = await claimBatch(store.db, { workerId: worker, limit: 7, orderingHoldSeconds: 300 });
        if (!claim) return;
        expect(claim.events.length).toBeGreaterThan(0);
        returned.set(claim.batchId, claim.events.map((e) => e.event_id).sort());
      }
    };
    await Promise.all(['w1', 'w2', 'w3', 'w4'].map(loop));
    const recorded = await store.db.query<{ batch_id: string; event_ids: string[] }>(
      'SELECT batch_id::text AS batch_id, event_ids FROM inbox_attempts',
    );
    expect(new Map(recorded.rows.map((r) => [r.batch_id, [...r.event_ids].sort()]))).toEqual(returned);
    const all = [...returned.values()].flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.sort()).toEqual(events.map((e) => e.event_id).sort());
  });

  it('a claim whose returned events differ from the batch it recorded throws and leaves no batch behind', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    await insertEnvelopes(store.db, [acted('cor_x', 0), acted('cor_y', 1)]);
    // The fault is injected into the result only: the batch row itself is written by Postgres as usual.
    const dropsOneRow: Pick<Db, 'transaction'> = {
      transaction: (fn) =>
        store.db.transaction((tx) =>
          fn({
            ...tx,
            query: async <R>(sql: Sql, params?: readonly unknown[]) => {
              const res = await tx.query<R>(sql, params);
              return typeof sql !== 'string' && sql.name.startsWith('postroom_claim_') ? { ...res, rows: res.rows.slice(1) } : res;
            },
          }),
        ),
    };
    await expect(claimBatch(dropsOneRow, { workerId: 'w1', limit: 10, orderingHoldSeconds: 300 })).rejects.toMatchObject({
      code: 'claim_inconsistent',
    });
    expect((await store.db.query('SELECT batch_id FROM inbox_attempts')).rows).toEqual([]);
    expect((await claimBatch(store.db, { workerId: 'w2', limit: 10, orderingHoldSeconds: 300 }))!.events).toHaveLength(2);
  });

  it('the reaper counts no attempt for a batch younger than its lease, nor for one a live worker holds; a batch it took is not run', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    const event = acted('cor_r', 0);
    await insertEnvelopes(store.db, [event]);
    const claim = await claimBatch(store.db, { workerId: 'w1', limit: 10, orderingHoldSeconds: 300 });
    const attemptRows = async () => (await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox_attempts')).rows[0]!.n;

    // Younger than the lease: no evidence yet that its worker stopped.
    expect(await reapOrphanedAttempts(store.db, 10, 60)).toEqual([]);
    expect(await inboxRow(store.db, event.event_id)).toMatchObject({ status: 'received', attempts: 0, last_error: null });
    expect(await attemptRows()).toBe(1);

    await store.db.query(`UPDATE inbox_attempts SET started_at = now() - interval '1 hour'`);
    if (kind === 'postgres') {
      // Older than the lease, but a live worker's batch transaction holds it: still nothing.
      const rollback = new Error('rollback');
      await expect(
        store.db.transaction(async (tx) => {
          expect(await takeBatch(tx, claim!.batchId)).toBe(true);
          expect(await reapOrphanedAttempts(store.db, 10, 60)).toEqual([]);
          throw rollback;
        }),
      ).rejects.toBe(rollback);
      expect(await inboxRow(store.db, event.event_id)).toMatchObject({ status: 'received', attempts: 0 });
    }

    // Unheld and older than the lease: the attempt is counted once, and the worker that comes late runs nothing.
    expect(await reapOrphanedAttempts(store.db, 10, 60)).toEqual([
      { event_id: event.event_id, type: 'participant.acted', status: 'failed' },
    ]);
    expect(await inboxRow(store.db, event.event_id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: expect.stringMatching(/lease expired: worker w1 stopped before finishing attempt 1/),
    });
    expect(await attemptRows()).toBe(0);
    expect(await reapOrphanedAttempts(store.db, 10, 60)).toEqual([]);
    expect(await store.db.transaction((tx) => takeBatch(tx, claim!.batchId))).toBe(false);
  });

  it('claims take turns: a claim waits for the one before it to commit, then leaves its events alone', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    // Distinct correspondences: nothing holds anything back, so both claims would want the same first events.
    await insertEnvelopes(
      store.db,
      Array.from({ length: 6 }, (_, i) => acted(`cor_turn_${i}`, i)),
    );
    let commit!: () => void;
    const gate = new Promise<void>((resolve) => (commit = resolve));
    // The first claim's transaction stays open after its statements, as if its commit were slow.
    const slow = pausedBeforeCommit(store.db, () => gate);
    const first = claimBatch(slow.db, { workerId: 'w1', limit: 4, orderingHoldSeconds: 300 });
    let secondDone = false;
    let second: ReturnType<typeof claimBatch>;
    try {
      await slow.ran;
      second = claimBatch(store.db, { workerId: 'w2', limit: 4, orderingHoldSeconds: 300 }).finally(() => (secondDone = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(secondDone).toBe(false);
    } finally {
      // Even when the check fails: a claim left open holds the turn, and the store could not be dropped after it.
      commit();
    }
    const [a, b] = await Promise.all([first, second]);
    expect(a!.events).toHaveLength(4);
    expect(b!.events).toHaveLength(2);
    expect(new Set([...a!.events, ...b!.events].map((e) => e.event_id)).size).toBe(6);
  });

  // The embedded store has one connection in this process: no peer of it can vanish.
  it.skipIf(kind !== 'postgres')(
    'a claim whose worker goes quiet inside its transaction loses the turn after a few seconds; its events go to the next claim',
    async () => {
      const store = await openTestStore(kind);
      cleanups.push(store.cleanup);
      const events = [acted('cor_quiet_1', 0), acted('cor_quiet_2', 1)];
      await insertEnvelopes(store.db, events);
      // As a worker cut off from Postgres after its claim's statement: its connection stays open, and no commit comes.
      const quiet = pausedBeforeCommit(store.db, () => new Promise((resolve) => setTimeout(resolve, 6_500)));
      const first = claimBatch(quiet.db, { workerId: 'w1', limit: 10, orderingHoldSeconds: 300 }).then(
        () => 'committed',
        () => 'failed',
      );
      await quiet.ran;
      const second = await claimBatch(store.db, { workerId: 'w2', limit: 10, orderingHoldSeconds: 300 });
      expect(second!.events.map((e) => e.event_id).sort()).toEqual(events.map((e) => e.event_id).sort());
      expect(await first).toBe('failed');
      const batches = await store.db.query<{ worker_id: string }>('SELECT worker_id FROM inbox_attempts');
      expect(batches.rows).toEqual([{ worker_id: 'w2' }]);
    },
    30_000,
  );

  it('upgrading past migration 015: a claim of an earlier version is refused, saying why; its batches in flight still finish', async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(15, cleanups) });
    const events = [acted('cor_u1', 0), acted('cor_u2', 1), acted('cor_u3', 2)];
    await insertBeforeLedger(
      store.db,
      events.map((e) => toRow(e)),
    );
    // A worker of the earlier version claimed the first two events before the upgrade and is running them.
    const before = await store.db.query<{ batch_id: string }>(
      `INSERT INTO inbox_attempts (worker_id, event_ids) VALUES ('old-worker', $1) RETURNING batch_id::text AS batch_id`,
      [[events[0]!.event_id, events[1]!.event_id]],
    );
    await migrate(store.db);
    // Its next claim, as that version writes it, fails with the reason and what to do.
    const refused = await store.db
      .query(`INSERT INTO inbox_attempts (worker_id, event_ids) VALUES ('old-worker', $1)`, [[events[2]!.event_id]])
      .then(
        () => undefined,
        (err: unknown) => err as { message: string; hint?: string },
      );
    expect(refused?.message).toMatch(/older than migration 015/);
    expect(refused?.hint).toMatch(/Replace every worker of an earlier postroom version/);
    // The batch it holds can still shrink (one event at a time after a failure) and be taken to commit.
    await store.db.query(`UPDATE inbox_attempts SET event_ids = array_remove(event_ids, $2) WHERE batch_id = $1::bigint`, [
      before.rows[0]!.batch_id,
      events[1]!.event_id,
    ]);
    expect(await store.db.transaction((tx) => takeBatch(tx, before.rows[0]!.batch_id))).toBe(true);
    // A claim of this version takes what is left.
    const claim = await claimBatch(store.db, { workerId: 'new-worker', limit: 10, orderingHoldSeconds: 300 });
    expect(claim!.events.map((e) => e.event_id).sort()).toEqual(events.map((e) => e.event_id).sort());
  });

  it("upgrading with an earlier version's batch in flight: its rows are reaped and run, and a claim of the earlier kind fails", async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(8, cleanups) });
    const held = acted('cor_old', 0);
    const waiting = acted('cor_new', 1);
    // Written as that version wrote them, in the columns its schema had (this build's insert names later ones).
    for (const e of [held, waiting]) {
      await store.db.query(
        `INSERT INTO inbox (event_id, type, occurred_at, payload, correspondence_id, source) VALUES ($1, $2, $3, $4::jsonb, $5, 'webhook')`,
        [e.event_id, e.type, e.at, JSON.stringify(e), e.data.correspondence_id],
      );
    }
    // A worker of the earlier version claimed one event and was stopped for the upgrade.
    await store.db.query(
      `UPDATE inbox SET status = 'processing', attempts = 1, locked_by = 'old-worker', locked_until = now() - interval '1 second'
       WHERE event_id = $1`,
      [held.event_id],
    );

    await migrate(store.db);
    // An earlier-version worker still running cannot take the event that a new one might be running.
    await expect(
      store.db.query(`UPDATE inbox SET status = 'processing', locked_by = 'old-worker' WHERE event_id = $1`, [waiting.event_id]),
    ).rejects.toThrow(/inbox_processing_retired/);
    expect((await inboxStats(store.db)).by_status).toEqual({ processing: 1, received: 1 });

    const postroom = createPostroom({ db: store.db, worker: { concurrency: 1, listen: false, leaseSeconds: 1 } });
    await postroom.drain();
    expect(await inboxRow(store.db, held.event_id)).toMatchObject({
      status: 'processed',
      attempts: 2,
      last_error: expect.stringMatching(/lease expired: worker old-worker/),
    });
    expect(await inboxRow(store.db, waiting.event_id)).toMatchObject({ status: 'processed', attempts: 1 });
  });
});
