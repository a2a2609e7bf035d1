import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import type { Clock } from '../../src/clock.js';
import { createLogger } from '../../src/logging/logger.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

/**
 * The webhook path answers from callbacks (the body read, the flush): a throw in one of them has no promise to
 * land in. These inject a fault into a real dependency (the clock, the log's destination) and check that the
 * sender is answered or its connection closed, and that the process goes on serving.
 */
describe('a fault on the webhook path', () => {
  let store: TestStore;
  let server: RunningServer;
  const lines: string[] = [];
  /** The next clock reading throws, once. */
  let clockFails = false;
  /** Log lines whose message contains this throw from the destination's write, as a full disk or closed pipe would. */
  let failLinesWith: string | undefined;
  const clock: Clock = {
    now() {
      if (clockFails) {
        clockFails = false;
        throw new Error('injected: the clock failed');
      }
      return Date.now();
    },
  };
  // pino's own kind of destination (an object with write): a stream's write that threw would jam the stream.
  const destination = {
    write(line: string) {
      if (failLinesWith !== undefined && line.includes(failLinesWith)) throw new Error('injected: the log destination failed');
      lines.push(line);
    },
  };

  beforeAll(async () => {
    store = await openDefaultTestStore();
    server = await startReceiver({ db: store.db, clock, logger: createLogger({ level: 'info', destination }) });
  });
  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
  });

  it('while the request is read closes that connection, logs why, and the next delivery is stored', async () => {
    clockFails = true;
    await expect(postEvent(`${server.url}/webhooks`, makeEvent(), { secret: TEST_SECRET })).rejects.toThrow();
    expect(clockFails).toBe(false);
    expect(lines.join('')).toContain('a webhook request failed before it could be answered; closing its connection');

    const next = makeEvent();
    const res = await postEvent(`${server.url}/webhooks`, next, { secret: TEST_SECRET });
    expect(res.status).toBe(200);
    const row = await store.db.query<{ status: string }>('SELECT status FROM inbox WHERE event_id = $1', [next.event_id]);
    expect(row.rows).toEqual([{ status: 'received' }]);
  });

  it('after the write answers 503 (the row is kept, so the retry is its duplicate)', async () => {
    failLinesWith = 'signed body is not a valid envelope';
    try {
      const event = makeEvent({ at: 'not a timestamp' });
      const first = await postEvent(`${server.url}/webhooks`, event, { secret: TEST_SECRET });
      expect(first.status).toBe(503);
      expect(first.headers['retry-after']).toBeDefined();
      expect(lines.join('')).toContain('ingress failed after the write; answering 503 so the sender retries');
      const row = await store.db.query<{ status: string }>('SELECT status FROM inbox WHERE event_id = $1', [event.event_id]);
      expect(row.rows).toEqual([{ status: 'quarantined' }]);

      const retry = await postEvent(`${server.url}/webhooks`, event, { secret: TEST_SECRET });
      expect({ status: retry.status, body: retry.body }).toEqual({ status: 200, body: { status: 'duplicate' } });
    } finally {
      failLinesWith = undefined;
    }
  });
});
