import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import { EventError, PostroomError, type EventErrorContext } from '../../src/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';

const SECRET = 'whsec_on_error_0123456789abcdef';

/** onError, like octokit's: a coded error and its context for each handler failure, dead event and quarantined event. */
describe('createPostroom({ onError })', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openDefaultTestStore();
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('reports a failing handler on each attempt, then the event going dead, with the handler error as cause', async () => {
    const reported: Array<{ error: EventError; context: EventErrorContext }> = [];
    const postroom = createPostroom({
      db: store.db,
      secrets: [SECRET],
      worker: { listen: false, maxAttempts: 2, retryBackoff: { baseDelayMs: 0, maxDelayMs: 0 } },
      onError: (error, context) => void reported.push({ error, context }),
    });
    const boom = new Error('downstream refused');
    postroom.on('participant.acted', () => {
      throw boom;
    });
    const server = http.createServer(postroom.handler());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const event = makeEvent({ type: 'participant.acted' });
      const res = await postEvent(`http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, event, { secret: SECRET });
      expect(res.body).toEqual({ status: 'accepted' });
      await postroom.drain();
      expect(reported.map((r) => [r.error.code, r.context.status, r.context.attempt, r.context.source])).toEqual([
        ['handler_failed', 'failed', 1, 'worker'],
        ['event_dead', 'dead', 2, 'worker'],
      ]);
      for (const { error, context } of reported) {
        expect(error).toBeInstanceOf(EventError);
        expect(error).toBeInstanceOf(PostroomError);
        expect(error.cause).toBe(boom);
        expect(context).toMatchObject({ eventId: event.event_id, type: 'participant.acted' });
      }
      expect(reported[0]!.context.retryInMs).toBe(0);
      expect(reported[1]!.context.retryInMs).toBeNull();
    } finally {
      await new Promise((r) => server.close(r));
      await postroom.stop(1000);
    }
  });

  it('reports quarantine by ingress (a signed body that is not an envelope) and by the worker (data the catalogue refuses); a throwing hook changes nothing', async () => {
    const reported: Array<[string, string, string]> = [];
    const postroom = createPostroom({
      db: store.db,
      secrets: [SECRET],
      worker: { listen: false },
      onError: (error, context) => {
        reported.push([error.code, context.status, context.source]);
        throw new Error('the reporter is down');
      },
    });
    const server = http.createServer(postroom.handler());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    try {
      const notEnvelope = await postEvent(url, null, { secret: SECRET, body: '{"event_id":"evt_q_1","type":"participant.acted"}' });
      expect(notEnvelope.body).toEqual({ status: 'quarantined' });
      const badData = makeEvent({ type: 'participant.acted', data: { correspondence_id: 'cor_q' } });
      expect((await postEvent(url, badData, { secret: SECRET })).body).toEqual({ status: 'accepted' });
      const drained = await postroom.drain();
      expect(drained.by_status).toEqual({ quarantined: 1 });
      expect(reported).toEqual([
        ['event_quarantined', 'quarantined', 'ingress'],
        ['event_quarantined', 'quarantined', 'worker'],
      ]);
    } finally {
      await new Promise((r) => server.close(r));
      await postroom.stop(1000);
    }
  });

  it('reports a row the store refused as quarantined by ingress, once: not again for its re-delivery', async () => {
    const reported: Array<[string, string, string, string | undefined]> = [];
    const postroom = createPostroom({
      db: store.db,
      secrets: [SECRET],
      worker: { listen: false },
      onError: (error, context) => void reported.push([error.code, context.status, context.source, context.eventId]),
    });
    const server = http.createServer(postroom.handler());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    // A refusal no envelope check predicts: a constraint the store enforces on received rows only.
    await store.db.exec(`ALTER TABLE inbox ADD CONSTRAINT test_refuses CHECK (status <> 'received' OR event_id NOT LIKE 'evt_refused_%')`);
    try {
      const refused = makeEvent({ event_id: 'evt_refused_on_error' });
      expect((await postEvent(url, refused, { secret: SECRET })).body).toEqual({ status: 'quarantined' });
      expect((await postEvent(url, refused, { secret: SECRET })).body).toEqual({ status: 'duplicate' });
      expect(reported).toEqual([['event_quarantined', 'quarantined', 'ingress', 'evt_refused_on_error']]);
    } finally {
      await store.db.exec('ALTER TABLE inbox DROP CONSTRAINT test_refuses');
      await new Promise((r) => server.close(r));
      await postroom.stop(1000);
    }
  });
});
