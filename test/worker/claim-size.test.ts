import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHandlerRegistry } from '../../src/events/registry.js';
import { silentLogger } from '../../src/logging/logger.js';
import { BASE_CLAIM_SIZE, createClaimSizer, QUICK_EVENT_MS } from '../../src/worker/claim-size.js';
import { createWorker } from '../../src/worker/worker.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { countByStatus, envelope, insertEnvelopes } from './support.js';

describe('claim sizing', () => {
  const quick = (claimed: number, limit: number) => ({ claimed, ran: claimed, limit, elapsedMs: claimed * QUICK_EVENT_MS * 0.5 });
  const slow = (claimed: number, limit: number) => ({ claimed, ran: claimed, limit, elapsedMs: claimed * QUICK_EVENT_MS * 2 });

  it('starts at the base size and doubles after each full batch of quick events, up to the maximum', () => {
    const sizer = createClaimSizer(500);
    const limits = [sizer.limit];
    for (let i = 0; i < 4; i++) {
      sizer.after(quick(sizer.limit, sizer.limit));
      limits.push(sizer.limit);
    }
    expect(limits).toEqual([BASE_CLAIM_SIZE, 200, 400, 500, 500]);
  });

  it('does not grow after a batch that was not full: the backlog was smaller than the claim', () => {
    const sizer = createClaimSizer(500);
    sizer.after(quick(40, 100));
    expect(sizer.limit).toBe(100);
  });

  it('drops back to the base size after a batch of slow events, full or not', () => {
    const sizer = createClaimSizer(500);
    sizer.after(quick(100, 100));
    sizer.after(quick(200, 200));
    expect(sizer.limit).toBe(400);
    sizer.after(slow(10, 400));
    expect(sizer.limit).toBe(100);
    sizer.after(slow(100, 100));
    expect(sizer.limit).toBe(100);
  });

  it('counts the time per event it ran: a batch that gave most of its events back was slow', () => {
    const sizer = createClaimSizer(500);
    sizer.after(quick(100, 100));
    // 100 events of 3 ms ran and 100 were given back: 1.5 ms per claimed event, 3 ms per event run.
    sizer.after({ claimed: 200, ran: 100, limit: 200, elapsedMs: 300 });
    expect(sizer.limit).toBe(100);
  });

  it('never asks for more than a configured maximum below the base size', () => {
    const sizer = createClaimSizer(10);
    expect(sizer.limit).toBe(10);
    sizer.after(quick(10, 10));
    expect(sizer.limit).toBe(10);
  });

  it('ignores a claim that found nothing', () => {
    const sizer = createClaimSizer(500);
    sizer.after(quick(100, 100));
    sizer.after({ claimed: 0, ran: 0, limit: 200, elapsedMs: 50 });
    expect(sizer.limit).toBe(200);
  });

  it('rejects a maximum that is not a positive integer', () => {
    expect(() => createClaimSizer(0)).toThrow(RangeError);
    expect(() => createClaimSizer(2.5)).toThrow(RangeError);
  });
});

/** Well past QUICK_EVENT_MS. */
const SLOW_EVENT_MS = QUICK_EVENT_MS * 3;

/**
 * The worker's stopwatch moves only when a handler says its event took time: whether a batch is quick does not
 * depend on how fast this machine runs the store, only on what the handlers report.
 */
function drainTimed(db: TestStore['db'], eventMs: (call: number) => number) {
  let elapsed = 0;
  let calls = 0;
  const registry = createHandlerRegistry();
  registry.on('participant.acted', () => {
    elapsed += eventMs(++calls);
  });
  const worker = createWorker({
    db,
    registry,
    logger: silentLogger(),
    options: { concurrency: 1, listen: false },
    stopwatch: () => elapsed,
  });
  return worker.drain().then((result) => ({ result, calls }));
}

describe.each(await availableStoreKinds())('claims grow with quick events and not with slow ones (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection');
  });
  afterAll(async () => store?.cleanup());

  const events = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      envelope(
        'participant.acted',
        { correspondence_id: `cor_${i}`, participant_id: 'p', act: 'read', ref: 'r' },
        new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      ),
    );

  it('drains quick events in batches that grow past the base size', async () => {
    await insertEnvelopes(store.db, events(1000));
    const { result } = await drainTimed(store.db, () => 0);
    expect(await countByStatus(store.db)).toEqual({ processed: 1000 });
    // 100, 200, 400, 300 when every batch is quick; claims of a fixed 100 take ten.
    expect(result.batches).toBe(4);
  });

  it('gives back the part of a grown batch past the base size once its events turn slow, without counting an attempt', async () => {
    await insertEnvelopes(store.db, events(300));
    // The first claim's 100 events are quick, so the next claim asks for 200; then every event is slow.
    const { result, calls } = await drainTimed(store.db, (call) => (call <= 100 ? 0 : SLOW_EVENT_MS));
    expect(await countByStatus(store.db)).toEqual({ processed: 300 });
    // Claims of 100, 200 (100 run, 100 given back) and 100: the given-back events ran later, once each.
    expect({ givenBack: result.by_status.received, handlerCalls: calls, batches: result.batches }).toEqual({
      givenBack: 100,
      handlerCalls: 300,
      batches: 3,
    });
    const attempts = await store.db.query<{ attempts: number; n: number }>(
      'SELECT attempts, count(*)::int AS n FROM inbox GROUP BY attempts',
    );
    expect(attempts.rows.map((r) => [Number(r.attempts), Number(r.n)])).toEqual([[1, 300]]);
  });

  it('keeps batches of slow events at the base size', async () => {
    await insertEnvelopes(store.db, events(250));
    const { result } = await drainTimed(store.db, () => SLOW_EVENT_MS);
    expect(await countByStatus(store.db)).toEqual({ processed: 250 });
    // Three claims of at most 100, none grown: a claim that grew would have given events back (by_status.received).
    expect({ batches: result.batches, byStatus: result.by_status }).toEqual({ batches: 3, byStatus: { processed: 250 } });
  });
});
