import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { claimBatch } from '../../src/worker/claim-queries.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { countByStatus, createEffectsTable, EFFECT_SQL, envelope, inboxRow, insertEnvelopes, waitFor } from './support.js';

const kinds = await availableStoreKinds();

const OPTIONS: Partial<WorkerOptions> = { concurrency: 1, batchSize: 10, pollIntervalMs: 20, listen: false };

const three = () =>
  ['cor_1', 'cor_2', 'cor_3'].map((cid, i) =>
    envelope(
      'participant.acted',
      { correspondence_id: cid, participant_id: 'p', act: 'read', ref: 'r' },
      new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
    ),
  );

/** A gate a handler waits on; the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let entered!: () => void;
  const reached = new Promise<void>((r) => (entered = r));
  return { open, opened, entered, reached };
}

describe.each(kinds)('worker lifecycle (%s)', (kind) => {
  let store: TestStore;
  const running: Postroom[] = [];
  const make = (options: Partial<WorkerOptions>, workerId?: string): Postroom => {
    const p = createPostroom({ db: store.db, worker: options, ...(workerId ? { workerId } : {}) });
    running.push(p);
    return p;
  };

  beforeAll(async () => {
    store = await openTestStore(kind, { poolSize: 6 });
    await createEffectsTable(store.db);
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection, effects');
  });
  afterEach(async () => {
    for (const p of running.splice(0)) await p.stop(1000);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('stop() lets the handler in flight finish within the deadline and releases the events not started', async () => {
    const [a, b, c] = three();
    await insertEnvelopes(store.db, [a!, b!, c!]);
    const g = gate();
    const postroom = make(OPTIONS);
    postroom.on('participant.acted', async (event, ctx) => {
      if (event.event_id === a!.event_id) {
        g.entered();
        await g.opened;
      }
      await ctx.tx.query(EFFECT_SQL, [event.event_id, null, 0]);
    });
    await postroom.start();
    await g.reached;
    const stopped = postroom.stop(10_000);
    g.open();
    await stopped;
    expect(await inboxRow(store.db, a!.event_id)).toMatchObject({ status: 'processed', attempts: 1 });
    for (const e of [b!, c!])
      expect(await inboxRow(store.db, e.event_id)).toMatchObject({ status: 'received', attempts: 0, locked_by: null });
    expect((await store.db.query<{ event_id: string }>('SELECT event_id FROM effects')).rows).toEqual([{ event_id: a!.event_id }]);
  });

  it('at the deadline, interrupts the handler, undoes its writes and releases it without counting the attempt', async () => {
    const [a, b] = three();
    await insertEnvelopes(store.db, [a!, b!]);
    const g = gate();
    let aborted = false;
    const postroom = make(OPTIONS);
    postroom.on('participant.acted', async (event, ctx) => {
      await ctx.tx.query(EFFECT_SQL, [event.event_id, null, 0]);
      g.entered();
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      aborted = true;
    });
    await postroom.start();
    await g.reached;
    await postroom.stop(300);
    expect(aborted).toBe(true);
    for (const e of [a!, b!])
      expect(await inboxRow(store.db, e.event_id)).toMatchObject({ status: 'received', attempts: 0, locked_by: null });
    expect((await store.db.query('SELECT count(*)::int AS n FROM effects')).rows[0]).toEqual({ n: 0 });

    // Another worker picks everything up.
    const next = make(OPTIONS);
    await next.drain();
    expect(await countByStatus(store.db)).toEqual({ processed: 2 });
  });

  it('drain() on a started worker returns only after the batch its own loop holds has committed', async () => {
    const [a] = three();
    await insertEnvelopes(store.db, [a!]);
    const g = gate();
    const postroom = make(OPTIONS);
    postroom.on('participant.acted', async (event, ctx) => {
      g.entered();
      await g.opened;
      await ctx.tx.query(EFFECT_SQL, [event.event_id, null, 0]);
    });
    await postroom.start();
    // The loop holds the only event: drain's own claim finds nothing to take.
    await g.reached;
    let drained = false;
    const draining = postroom.drain().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(drained).toBe(false);
    g.open();
    await draining;
    expect(await inboxRow(store.db, a!.event_id)).toMatchObject({ status: 'processed', attempts: 1 });
    expect((await store.db.query('SELECT count(*)::int AS n FROM effects')).rows[0]).toEqual({ n: 1 });
  });

  it('reclaims the events of a worker that died after claiming, once its lease expires', async () => {
    const events = three();
    await insertEnvelopes(store.db, events);
    // A worker claims and is never heard of again.
    const claimed = await claimBatch(store.db, { workerId: 'crashed-worker', limit: 10, orderingHoldSeconds: 300 });
    expect(claimed!.events).toHaveLength(3);
    const postroom = make({ ...OPTIONS, leaseSeconds: 1 });
    const handled: string[] = [];
    postroom.on('participant.acted', (e) => void handled.push(e.event_id));
    await postroom.start();
    await waitFor(async () => (await countByStatus(store.db)).processed === 3, 'reclaimed events processed');
    expect(handled.sort()).toEqual(events.map((e) => e.event_id).sort());
    const row = await inboxRow(store.db, events[0]!.event_id);
    expect(row).toMatchObject({
      status: 'processed',
      attempts: 2,
      last_error: expect.stringMatching(/lease expired: worker crashed-worker/),
    });
  });

  it('counts a crash as an attempt: an event that keeps killing its worker goes dead', async () => {
    const [a] = three();
    await insertEnvelopes(store.db, [a!]);
    await claimBatch(store.db, { workerId: 'crashed-worker', limit: 10, orderingHoldSeconds: 300 });
    const postroom = make({ ...OPTIONS, leaseSeconds: 1, maxAttempts: 1 });
    await postroom.start();
    await waitFor(async () => (await inboxRow(store.db, a!.event_id)).status === 'dead', 'crash-looping event dead');
  });

  it.runIf(kind === 'postgres')('never hands an event to a second worker while the first is still running it, however long', async () => {
    const [a] = three();
    await insertEnvelopes(store.db, [a!]);
    const g = gate();
    let calls = 0;
    const slow = make({ ...OPTIONS, leaseSeconds: 1 }, 'slow-worker');
    slow.on('participant.acted', async () => {
      calls++;
      g.entered();
      await g.opened;
    });
    const other = make({ ...OPTIONS, leaseSeconds: 1 }, 'other-worker');
    other.on('participant.acted', () => void calls++);
    await slow.start();
    await g.reached;
    await other.start();
    // Well past the lease: the other worker's reaper runs several times meanwhile.
    await new Promise((r) => setTimeout(r, 2500));
    g.open();
    await waitFor(async () => (await inboxRow(store.db, a!.event_id)).status === 'processed', 'slow event processed');
    expect(calls).toBe(1);
    expect((await inboxRow(store.db, a!.event_id)).attempts).toBe(1);
  });
});
