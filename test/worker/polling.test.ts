import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHandlerRegistry } from '../../src/events/registry.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createWorker } from '../../src/worker/worker.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { envelope, insertEnvelopes, inboxRow, waitFor } from './support.js';

// Several loops only on Postgres: the embedded store runs one (worker.ts).
const postgres = (await availableStoreKinds()).includes('postgres');

const POLL_MS = 100;

async function claimsCounted(metrics: ReturnType<typeof createMetrics>): Promise<number> {
  const { values } = await metrics.workerClaimDuration.get();
  return values.find((v) => v.metricName === 'postroom_worker_claim_duration_seconds_count')?.value ?? 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(postgres)('worker polling (postgres)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 6 });
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection');
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  const start = async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const worker = createWorker({
      db: store.db,
      registry: createHandlerRegistry(),
      logger: silentLogger(),
      metrics,
      // No notifications: only the poll finds work, as when a notification is missed.
      options: { concurrency: 4, pollIntervalMs: POLL_MS, listen: false },
    });
    await worker.start();
    return { worker, metrics };
  };

  it('idle loops poll the store about once per poll interval between them, not once each', async () => {
    // Each claim that finds nothing still walks the front of the claim order (docs/benchmarks.md, "Stop 43"); four
    // loops each polling on their own timers made four such claims per interval.
    const { worker, metrics } = await start();
    const windowMs = 2000;
    try {
      await sleep(windowMs);
    } finally {
      await worker.stop(1000);
    }
    const claims = await claimsCounted(metrics);
    // One per interval, plus each loop's first claim at start and a late timer or two.
    expect(claims).toBeLessThanOrEqual(windowMs / POLL_MS + 8);
    expect(claims).toBeGreaterThanOrEqual(5);
  });

  it('still finds an event nobody announced within a poll interval or two', async () => {
    const { worker } = await start();
    try {
      // Let every loop go idle first, so only their polling can find it.
      await sleep(3 * POLL_MS);
      const e = envelope('participant.acted', { correspondence_id: 'cor_poll', participant_id: 'p', act: 'read', ref: 'r' });
      await insertEnvelopes(store.db, [e]);
      await waitFor(async () => (await inboxRow(store.db, e.event_id)).status === 'processed', 'the unannounced event processed', 5000, 20);
    } finally {
      await worker.stop(1000);
    }
  });
});
