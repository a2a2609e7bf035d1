import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInboxWriter } from '../../src/inbox/group-commit.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import type { NewInboxEvent } from '../../src/inbox/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

function row(id: string, overrides: Partial<NewInboxEvent> = {}): NewInboxEvent {
  const payload = { event_id: id, type: 'participant.acted', at: '2026-11-18T10:15:00Z', data: { correspondence_id: 'cor_1' } };
  return {
    eventId: id,
    type: 'participant.acted',
    occurredAt: payload.at,
    payloadJson: JSON.stringify(payload),
    rawBody: Buffer.from(JSON.stringify(payload)),
    signatureHeader: 't=1,v1=00',
    headers: null,
    endpointId: null,
    source: 'webhook',
    correspondenceId: 'cor_1',
    secretIndex: 0,
    status: 'received',
    lastError: null,
    ...overrides,
  };
}

describe.each(await availableStoreKinds())('group-commit inbox writer on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.cleanup());

  it('shares commits between concurrent submissions and bounds the batch size', async () => {
    const flushes: number[] = [];
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 16, onFlush: (s) => flushes.push(s.rows) });
    const ids = Array.from({ length: 100 }, (_, i) => `evt_gc_${kind}_${i}`);
    const outcomes = await Promise.all(ids.map((id) => writer.submit(row(id))));
    expect(outcomes.every((o) => o === 'accepted')).toBe(true);
    expect(flushes.reduce((a, b) => a + b, 0)).toBe(100);
    expect(Math.max(...flushes)).toBeLessThanOrEqual(16);
    // Everything queued behind the first lone flush went out in full batches.
    expect(flushes.length).toBeLessThan(100);
    await writer.close();
  });

  it('answers the first copy of an id in a batch accepted and the rest duplicate', async () => {
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 64 });
    const outcomes = await Promise.all([1, 2, 3].map(() => writer.submit(row(`evt_same_${kind}`))));
    expect(outcomes.sort()).toEqual(['accepted', 'duplicate', 'duplicate']);
    await writer.close();
  });

  it('isolates a row the store refuses: the rest of its batch is stored, and it is kept as quarantined', async () => {
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 64 });
    const good = Array.from({ length: 9 }, (_, i) => row(`evt_ok_${kind}_${i}`));
    // Passes our checks but not Postgres' timestamp parser.
    const bad = row(`evt_bad_${kind}`, { occurredAt: '2026-02-31T10:00:00Z' });
    const outcomes = await Promise.all([...good.slice(0, 4), bad, ...good.slice(4)].map((r) => writer.submit(r)));
    // Each answer says what the store kept: the refused row as quarantined, the rest as sent.
    expect(outcomes).toEqual([...Array(4).fill('accepted'), 'quarantined', ...Array(5).fill('accepted')]);
    for (const g of good) expect((await getInboxEvent(store.db, g.eventId))?.status).toBe('received');
    const stored = await getInboxEvent(store.db, bad.eventId);
    expect(stored).toMatchObject({ status: 'quarantined', payload: null });
    expect(stored!.last_error).toMatch(/store refused/);
    await writer.close();
  });

  it('refuses new work after close, once queued work is flushed', async () => {
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 8 });
    const pending = writer.submit(row(`evt_close_${kind}`));
    await writer.close();
    expect(await pending).toBe('accepted');
    await expect(writer.submit(row(`evt_after_${kind}`))).rejects.toMatchObject({ code: 'store_unavailable' });
  });

  it('tells a sink each outcome once, after the commit, as submit does; a closed writer tells it at once', async () => {
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 8 });
    const told: Array<[string, unknown]> = [];
    const sink = (id: string) => ({
      resolve: (o: unknown) => told.push([id, o]),
      reject: (e: unknown) => told.push([id, (e as { code?: string }).code]),
    });
    const id = `evt_sink_${kind}`;
    writer.enqueue(row(id), sink('a'));
    writer.enqueue(row(id), sink('b'));
    // Nothing is told before the flush that holds the row has committed.
    expect(told).toEqual([]);
    await writer.close();
    expect(told).toEqual([
      ['a', 'accepted'],
      ['b', 'duplicate'],
    ]);
    expect((await getInboxEvent(store.db, id))?.event_id).toBe(id);
    writer.enqueue(row(`evt_sink_after_${kind}`), sink('c'));
    expect(told.at(-1)).toEqual(['c', 'store_unavailable']);
  });

  it('tells every waiter of a flush even when one throws on its outcome, and keeps writing', async () => {
    const flushes: number[] = [];
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 8, onFlush: (f) => flushes.push(f.rows) });
    const told: unknown[] = [];
    const throwing = {
      resolve: () => {
        throw new Error('the answer failed');
      },
      reject: () => {
        throw new Error('the answer failed');
      },
    };
    // The first row is flushed alone at once; the next two wait for the flush after it, together.
    const first = writer.submit(row(`evt_tell_0_${kind}`));
    writer.enqueue(row(`evt_tell_1_${kind}`), throwing);
    writer.enqueue(row(`evt_tell_2_${kind}`), { resolve: (o) => told.push(o), reject: (e) => told.push(e) });
    expect(await first).toBe('accepted');
    expect(await writer.submit(row(`evt_tell_3_${kind}`))).toBe('accepted');
    expect(told).toEqual(['accepted']);
    // The throwing waiter shared its flush with the one still told.
    expect(flushes[0]).toBe(1);
    expect(flushes[1]).toBeGreaterThanOrEqual(2);
    await writer.close();
  });
});
