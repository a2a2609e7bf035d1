import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClosingServer, createPostroom } from '../../src/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';

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

    const acked: string[] = [];
    const failures: string[] = [];
    let closing = false;
    let closed = false;
    const senders = Array.from({ length: SENDERS }, async () => {
      while (!closed) {
        const event = makeEvent();
        const sentWhileClosing = closing;
        try {
          const res = await postEvent(url, event, { secret: SECRET, dispatcher: agent });
          if (res.status === 200) acked.push(event.event_id);
          else failures.push(`status ${res.status}`);
        } catch (err) {
          // Once the listener is closed a new connection is refused: the door closing, not a request cut.
          const code = (err as { code?: string }).code ?? (err as Error).message;
          if (!(sentWhileClosing && code === 'ECONNREFUSED')) failures.push(code);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
    });
    while (acked.length < 100) await new Promise((resolve) => setTimeout(resolve, 10));
    closing = true;
    // The grace is far longer than this test's time-out: only the answers themselves can end the close in time.
    await web.close(600_000);
    closed = true;
    await Promise.all(senders);
    await postroom.stop(1000);

    expect(web.server.listening).toBe(false);
    expect(failures).toEqual([]);
    const stored = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [acked]);
    expect(stored.rows[0]!.n).toBe(acked.length);
  }, 30_000);
});
