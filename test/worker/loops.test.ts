import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHandlerRegistry } from '../../src/events/registry.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createWorker } from '../../src/worker/worker.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { QUICK_EVENT_MS } from '../../src/worker/claim-size.js';
import { countByStatus, envelope, insertEnvelopes, waitFor, watchStore, type WatchedStore } from './support.js';

// Several loops only on Postgres: the embedded store runs one (src/worker/worker.ts).
const postgres = (await availableStoreKinds()).includes('postgres');

interface Drain {
  count: number;
  handlerMs: number;
  /**
   * `backlog`: the events are there when the loops start, and only claims find them (no notifications; a poll
   * interval shorter than a batch of quick events takes, as a busy machine made the 100 ms one). `announced`: the loops start on an empty inbox and sleep; the events' insert notifies, and the
   * poll is too long to matter, so only the worker's own wakes (a notification, a full batch) bring loops in.
   */
  arrival: 'backlog' | 'announced';
}

/** Every SAMPLE_EVERY-th event counts the batches in flight. */
const SAMPLE_EVERY = 10;

interface Counted {
  /** Events whose handler ran. */
  handled: number;
  /** `at`: the event's place in the order the handlers ran; `others`: the other batches in flight then; `t`: when. */
  samples: Array<{ at: number; others: number; t: number }>;
  /** The worker's batches, as its store saw them. */
  batches: WatchedStore['batches'];
}

/**
 * How many other batches were in flight while events ran: a sampled event's handler counts the claim rows of
 * inbox_attempts from inside its own batch's transaction, which has already taken its own row. Only one event in
 * SAMPLE_EVERY asks: a query from every handler cost 2–3 ms an event on a slow machine busy with other test files,
 * which made the events themselves slow by the worker's measure, and the loops rightly fanned out.
 */
async function drainCountingOthers(store: TestStore, { count, handlerMs, arrival }: Drain): Promise<Counted> {
  const events = Array.from({ length: count }, (_, i) =>
    envelope('participant.acted', { correspondence_id: `cor_${i % 500}`, participant_id: 'p', act: 'read', ref: `r${i}` }),
  );
  if (arrival === 'backlog') await insertEnvelopes(store.db, events);
  const watched = watchStore(store.db);
  const counted: Counted = { handled: 0, samples: [], batches: watched.batches };
  const registry = createHandlerRegistry();
  registry.on('participant.acted', async (_event, ctx) => {
    const at = ++counted.handled;
    if (at % SAMPLE_EVERY === 0) {
      const res = await ctx.tx.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox_attempts');
      counted.samples.push({ at, others: res.rows[0]!.n, t: performance.now() });
    }
    if (handlerMs > 0) await new Promise((r) => setTimeout(r, handlerMs));
  });
  const worker = createWorker({
    db: watched.db,
    registry,
    logger: silentLogger(),
    options:
      arrival === 'backlog'
        ? { concurrency: 4, batchSize: 100, pollIntervalMs: 20, listen: false }
        : { concurrency: 4, batchSize: 100, pollIntervalMs: 60_000, listen: true },
  });
  await worker.start();
  try {
    if (arrival === 'announced') {
      // Every loop has made its first claim on the empty inbox and sleeps.
      await new Promise((r) => setTimeout(r, 300));
      await insertEnvelopes(store.db, events);
    }
    await waitFor(async () => (await countByStatus(store.db)).processed === count, `all ${count} events processed`, 60_000, 50);
  } finally {
    await worker.stop(2000);
  }
  return counted;
}

describe.runIf(postgres)('worker loops (postgres)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 8 });
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, inbox_attempts, correspondence_projection, participant_projection');
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('runs quick events in at most two batches at once once it has seen they are quick', async () => {
    // Four loops claiming side by side would each walk the claim order past the others' batches and contend with
    // them for Postgres (src/worker/pacing.ts, QUICK_LOOPS).
    const { handled, samples, batches } = await drainCountingOthers(store, { count: 3000, handlerMs: 0, arrival: 'backlog' });
    expect(handled).toBe(3000);
    // Every loop claims at start; after their first batches, two carry on. The others' polls find the backlog too,
    // but two loops run its quick batches and will claim again: a poll then is no reason to join them. Were those
    // polls not held back, 59 to 85 of 200 samples here would be crowded.
    const afterStart = samples.filter((s) => s.at > 1000);
    expect(afterStart).toHaveLength(200);
    // Unless the events were not quick after all: on a machine busy with other test files a batch can take longer
    // than QUICK_EVENT_MS an event, and then the worker rightly wakes another loop, which runs one batch. So a crowded
    // sample counts only when no batch in flight then had overrun and none had ended slow within the longest batch's
    // time before it. Without this exemption a loaded CI machine can show half the samples crowded.
    const slow = (b: (typeof batches)[number], until: number) => until - b.start > Math.max(b.size, 1) * QUICK_EVENT_MS;
    const longest = Math.max(...batches.map((b) => b.end - b.start));
    const excused = (t: number) =>
      batches.some((b) => (b.start <= t && t <= b.end && slow(b, t)) || (b.end <= t && t - b.end <= longest && slow(b, b.end)));
    expect(batches.length).toBeGreaterThan(20);
    const crowded = afterStart.filter((s) => s.others > 1 && !excused(s.t)).length;
    expect(crowded).toBeLessThanOrEqual(afterStart.length * 0.05);
  }, 90_000);

  it('brings more loops in for slow events', async () => {
    // One notification wakes one loop; a full batch of slow events wakes the next, and so on up to four. Without
    // those wakes the first loop would run every batch alone.
    const { handled, samples } = await drainCountingOthers(store, { count: 800, handlerMs: 5, arrival: 'announced' });
    expect(handled).toBe(800);
    expect(samples).toHaveLength(80);
    const crowded = samples.filter((s) => s.others > 1).length;
    expect(crowded).toBeGreaterThanOrEqual(samples.length * 0.3);
  }, 90_000);

  it('a poll brings another loop in when both quick loops are stuck in batches that overran', async () => {
    // Once batches have been quick, polls hold back while two loops run: they will claim again when done. Unless a
    // batch outlasts what quick events would take (src/worker/pacing.ts, moreLoopsWanted): here both running loops stop on
    // one event each, with the backlog behind them, and only a third loop's poll can take it on. Without that
    // check the polls sleep on while the two wait, and nothing else is processed.
    const count = 400;
    const armAfter = 100;
    await insertEnvelopes(
      store.db,
      Array.from({ length: count }, (_, i) =>
        envelope('participant.acted', { correspondence_id: `cor_${i}`, participant_id: 'p', act: 'read', ref: `r${i}` }),
      ),
    );
    let handled = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stuck = new Set<string>();
    const registry = createHandlerRegistry();
    registry.on('participant.acted', async (_event, ctx) => {
      handled++;
      if (handled <= armAfter || stuck.size >= 2) return;
      // One event in each of two batches: a batch is one transaction.
      const tx = (await ctx.tx.query<{ x: string }>('SELECT txid_current()::text AS x')).rows[0]!.x;
      if (stuck.has(tx) || stuck.size >= 2) return;
      stuck.add(tx);
      await gate;
    });
    const worker = createWorker({
      db: store.db,
      registry,
      logger: silentLogger(),
      options: { concurrency: 4, batchSize: 10, pollIntervalMs: 20, listen: false },
    });
    await worker.start();
    try {
      await waitFor(async () => stuck.size === 2, 'two batches stuck', 20_000, 10);
      // Every event but the two batches' own, at most 2 x 10, is processed while they wait.
      await waitFor(
        async () => ((await countByStatus(store.db)).processed ?? 0) >= count - 20,
        'the backlog processed past the two stuck batches',
        20_000,
        50,
      );
    } finally {
      release();
      await waitFor(async () => (await countByStatus(store.db)).processed === count, `all ${count} events processed`, 20_000, 50);
      await worker.stop(2000);
    }
  }, 90_000);
});
