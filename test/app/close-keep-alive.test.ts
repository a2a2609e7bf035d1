import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { startBusySenders } from '../support/busy-senders.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

const kind = (await availableStoreKinds())[0]!;
const SENDERS = 8;

/**
 * The service keeps its connections to an endpoint open and busy. A server that keeps answering on them
 * while it closes never sees them idle: it took every request for the whole shutdown deadline, then cut
 * the ones in flight (test/reconciler/reconcile-e2e.test.ts's receiver took 19 s to "go down"). Closing,
 * it must tell each connection so (Connection: close) and be done once the requests in flight are answered.
 */
describe(`closing under keep-alive load (${kind})`, () => {
  let store: TestStore;
  let server: RunningServer;
  // As the service does: a bounded pool of kept connections per endpoint.
  const agent = new Agent({ connections: SENDERS });

  beforeAll(async () => {
    store = await openTestStore(kind);
    server = await startReceiver({ db: store.db, env: { POSTROOM_SHUTDOWN_TIMEOUT_MS: '4000' } });
  });
  afterAll(async () => {
    await server?.close();
    await agent.close();
    await store?.cleanup();
  });

  it('answers every request that arrives while closing with Connection: close, and ends when those in flight are answered', async () => {
    const senders = startBusySenders({ url: `${server.url}/webhooks`, secret: TEST_SECRET, agent, count: SENDERS });
    const { answers, failures } = senders;
    await senders.answered(200);
    senders.closing();
    await server.close();
    await senders.stop();

    expect(answers.filter((a) => !a.answeredWhileClosing).every((a) => a.status === 200)).toBe(true);
    const whileClosing = answers.filter((a) => a.answeredWhileClosing);
    // Sent after close() began, so read after it: each must end its connection.
    const keptOpen = whileClosing.filter((a) => a.sentWhileClosing && a.connection !== 'close');
    expect(keptOpen.length, 'answers that kept their connection open while closing').toBe(0);
    // Each connection answers at most two while closing (one already sent whose reader had not yet seen
    // it, then the next request, answered with Connection: close) and takes no more.
    expect(whileClosing.length).toBeLessThanOrEqual(2 * SENDERS);
    // Nothing was cut: not the requests in flight (the old close cut them at its deadline), nor one a sender
    // was sending on a connection idle when closing began (server.close() resets those).
    expect(failures).toEqual([]);
    // And every event acknowledged, before or while closing, is stored.
    const acked = answers.filter((a) => a.status === 200).map((a) => a.eventId);
    const stored = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [acked]);
    expect(stored.rows[0]!.n).toBe(acked.length);
  });
});
