import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { countByStatus, envelope, inboxRow, insertEnvelopes, waitFor, type Envelope } from './support.js';

const kinds = await availableStoreKinds();

const OPTIONS: Partial<WorkerOptions> = {
  pollIntervalMs: 20,
  batchSize: 3,
  concurrency: 4,
  listen: true,
  retryBackoff: { baseDelayMs: 30, maxDelayMs: 30 },
};

/** `n` acts of one correspondence, one second apart, ids unrelated to their order. */
function history(cid: string, n: number, seed: number): Envelope[] {
  const ids = fc.sample(fc.uuid(), { numRuns: n, seed });
  return Array.from({ length: n }, (_, i) =>
    envelope(
      'participant.acted',
      { correspondence_id: cid, participant_id: `p${i % 3}`, act: `act_${i}`, ref: 'r' },
      new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      `evt_${ids[i]}`,
    ),
  );
}

function shuffle<T>(items: readonly T[], seed: number): T[] {
  return fc.sample(fc.shuffledSubarray([...items], { minLength: items.length }), { seed, numRuns: 1 })[0]!;
}

describe.each(kinds)('ordering per correspondence (%s)', (kind) => {
  let store: TestStore;
  let postroom: Postroom | undefined;

  beforeAll(async () => {
    store = await openTestStore(kind, { poolSize: 8 });
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection');
  });
  afterEach(async () => {
    await postroom?.stop(2000);
    postroom = undefined;
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it("handles a shuffled arrival of one correspondence's events in `at` order, across batches, loops and a retry", async () => {
    const events = history('cor_shuffled', 40, 7);
    const arrival = shuffle(events, 11);
    // Arrives in four deliveries (four inserts), each itself out of order.
    for (let i = 0; i < 4; i++) await insertEnvelopes(store.db, arrival.slice(i * 10, i * 10 + 10));

    const handled: string[] = [];
    let failedOnce = false;
    postroom = createPostroom({ db: store.db, worker: OPTIONS });
    postroom.on('participant.acted', async (event) => {
      if (event.data.act === 'act_12' && !failedOnce) {
        failedOnce = true;
        throw new Error('transient');
      }
      handled.push(event.data.act);
    });
    await postroom.start();
    await waitFor(async () => (await countByStatus(store.db)).processed === 40, 'all 40 events processed');
    expect(failedOnce).toBe(true);
    expect(handled).toEqual(events.map((e) => e.data.act));
  });

  it('breaks ties in `at` by event id, in one batch', async () => {
    const at = '2026-01-01T00:00:00.123456Z';
    const events = ['evt_c', 'evt_a', 'evt_b', 'evt_B'].map((id) =>
      envelope('participant.acted', { correspondence_id: 'cor_tie', participant_id: 'p', act: id, ref: 'r' }, at, id),
    );
    await insertEnvelopes(store.db, events);
    const handled: string[] = [];
    postroom = createPostroom({ db: store.db, worker: { ...OPTIONS, batchSize: 10 } });
    postroom.on('participant.acted', (e) => void handled.push(e.event_id));
    await postroom.drain();
    expect(handled).toEqual(['evt_B', 'evt_a', 'evt_b', 'evt_c']);
  });

  it('holds later events back while an earlier one waits to retry, without blocking other correspondences', async () => {
    const a = history('cor_a', 5, 1);
    const b = history('cor_b', 5, 2);
    await insertEnvelopes(store.db, [...a, ...b]);
    postroom = createPostroom({ db: store.db, worker: { ...OPTIONS, retryBackoff: { baseDelayMs: 600_000, maxDelayMs: 600_000 } } });
    postroom.on('participant.acted', (e) => {
      if (e.event_id === a[0]!.event_id) throw new Error('head of cor_a fails');
    });
    await postroom.drain();
    expect((await inboxRow(store.db, a[0]!.event_id)).status).toBe('failed');
    for (const e of a.slice(1)) expect((await inboxRow(store.db, e.event_id)).status).toBe('received');
    for (const e of b) expect((await inboxRow(store.db, e.event_id)).status).toBe('processed');
  });

  it('stops holding after POSTROOM_ORDERING_HOLD_SECONDS, so one poison event cannot block a correspondence forever', async () => {
    const a = history('cor_hold', 3, 3);
    await insertEnvelopes(store.db, a);
    postroom = createPostroom({
      db: store.db,
      worker: { ...OPTIONS, orderingHoldSeconds: 1, retryBackoff: { baseDelayMs: 600_000, maxDelayMs: 600_000 } },
    });
    const handled: string[] = [];
    postroom.on('participant.acted', (e) => {
      if (e.event_id === a[0]!.event_id) throw new Error('poison');
      handled.push(e.event_id);
    });
    await postroom.drain();
    expect(handled).toEqual([]);
    await postroom.start();
    await waitFor(async () => handled.length === 2, 'later events released by the hold');
    expect(handled).toEqual([a[1]!.event_id, a[2]!.event_id]);
    expect((await inboxRow(store.db, a[0]!.event_id)).status).toBe('failed');
  });

  it('releases the hold at once when the earlier event goes dead', async () => {
    const a = history('cor_dead', 3, 4);
    await insertEnvelopes(store.db, a);
    postroom = createPostroom({ db: store.db, worker: { ...OPTIONS, maxAttempts: 1 } });
    const handled: string[] = [];
    postroom.on('participant.acted', (e) => {
      if (e.event_id === a[0]!.event_id) throw new Error('poison');
      handled.push(e.event_id);
    });
    await postroom.drain();
    expect((await inboxRow(store.db, a[0]!.event_id)).status).toBe('dead');
    expect(handled).toEqual([a[1]!.event_id, a[2]!.event_id]);
  });
});
