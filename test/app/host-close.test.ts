import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClosingServer, createPostroom } from '../../src/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { startBusySenders } from '../support/busy-senders.js';

const SECRET = 'whsec_host_close_0123456789abcdef';
const SENDERS = 8;

/**
 * A host app serving postroom.handler() closes the way `postroom serve` does (test/app/close-keep-alive.test.ts):
 * the service keeps its connections busy, so a plain server.close() would wait on them until the host's own
 * deadline and then cut what was in flight. With the exported createClosingServer, the close is done once the
 * requests in flight are answered, and nothing acknowledged is lost.
 */
describe('a host app closing with createClosingServer from the public entry', () => {
  let store: TestStore;
  const agent = new Agent({ connections: SENDERS });
  beforeAll(async () => {
    store = await openDefaultTestStore();
  });
  afterAll(async () => {
    await agent.close();
    await store?.cleanup();
  });

  it('closes under keep-alive load once the requests in flight are answered, every acknowledged event stored', async () => {
    const postroom = createPostroom({ db: store.db, secrets: [SECRET], worker: { listen: false } });
    const web = createClosingServer({}, postroom.handler());
    await new Promise<void>((resolve) => web.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(web.server.address() as AddressInfo).port}/webhooks`;

    const senders = startBusySenders({ url, secret: SECRET, agent, count: SENDERS });
    await senders.answered(100);
    senders.closing();
    // The grace is far longer than this test's time-out: only the answers themselves can end the close in time.
    await web.close(600_000);
    await senders.stop();
    await postroom.stop(1000);

    expect(web.server.listening).toBe(false);
    expect(senders.failures).toEqual([]);
    expect(senders.answers.every((a) => a.status === 200)).toBe(true);
    const acked = senders.answers.map((a) => a.eventId);
    const stored = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [acked]);
    expect(stored.rows[0]!.n).toBe(acked.length);
  }, 30_000);
});
