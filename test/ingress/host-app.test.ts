import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { systemClock } from '../../src/clock.js';
import { createInboxWriter, type InboxWriter } from '../../src/inbox/group-commit.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { createIngressCore } from '../../src/ingress/accept.js';
import { captureRawBody, createIngressRouter } from '../../src/ingress/router.js';
import { staticSecrets } from '../../src/secrets/secret-provider.js';
import { silentLogger } from '../../src/logging/logger.js';
import { sign } from '../../src/signature/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent } from '../support/events.js';
import { TEST_SECRET } from '../support/receiver.js';

/** An organisation's existing Express app that mounts the postroom router at its own path. */
describe('postroom router mounted in a host Express app', () => {
  let store: TestStore;
  let writer: InboxWriter;
  let router: express.Router;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 64 });
    const core = createIngressCore({
      writer,
      secrets: staticSecrets([TEST_SECRET]),
      clock: systemClock,
      logger: silentLogger(),
      toleranceSeconds: 300,
      scheme: 'body',
      ackTimeoutMs: 5000,
    });
    router = createIngressRouter({ core, logger: silentLogger(), maxBodyBytes: 1024 * 1024 });
  });
  afterAll(async () => {
    await writer?.close();
    await store?.cleanup();
  });

  const signed = (event: object, pretty = false): { body: string; sig: string } => {
    const body = JSON.stringify(event, null, pretty ? 2 : 0);
    return { body, sig: sign({ secret: TEST_SECRET, body }) };
  };

  it("works at any path with the host app's global express.json() after it, which still parses other routes", async () => {
    const app = express();
    app.use('/integrations/cds/hooks', router);
    app.use(express.json());
    app.post('/api/echo', (req, res) => {
      res.json({ got: req.body });
    });
    const event = makeEvent();
    const { body, sig } = signed(event, true);
    const res = await request(app)
      .post('/integrations/cds/hooks')
      .set('content-type', 'application/json')
      .set('x-service-signature', sig)
      .send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted' });
    expect(await getInboxEvent(store.db, event.event_id)).toBeDefined();
    const echo = await request(app).post('/api/echo').send({ a: 1 });
    expect(echo.body).toEqual({ got: { a: 1 } });
  });

  it('works behind a global express.json() registered first when it keeps the raw bytes via captureRawBody', async () => {
    const app = express();
    app.use(express.json({ verify: captureRawBody }));
    app.use('/hooks', router);
    const event = makeEvent();
    // Pretty-printed: re-serialising the parsed JSON would break the signature.
    const { body, sig } = signed(event, true);
    const res = await request(app).post('/hooks').set('content-type', 'application/json').set('x-service-signature', sig).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted' });
  });

  it('refuses loudly (500 raw_body_unavailable) rather than guess when a global parser already consumed the bytes', async () => {
    const app = express();
    app.use(express.json());
    app.use('/hooks', router);
    const event = makeEvent();
    const { body, sig } = signed(event);
    const res = await request(app).post('/hooks').set('content-type', 'application/json').set('x-service-signature', sig).send(body);
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('raw_body_unavailable');
    expect(await getInboxEvent(store.db, event.event_id)).toBeUndefined();
  });

  it('routes /<endpoint_id> and rejects malformed endpoint ids', async () => {
    const app = express();
    app.use('/hooks', router);
    const event = makeEvent();
    const { body, sig } = signed(event);
    const ok = await request(app).post('/hooks/ep_123').set('content-type', 'application/json').set('x-service-signature', sig).send(body);
    expect(ok.status).toBe(200);
    expect((await getInboxEvent(store.db, event.event_id))?.endpoint_id).toBe('ep_123');
    const bad = await request(app).post('/hooks/%20bad%20id').set('x-service-signature', sig).send(body);
    expect(bad.status).toBe(404);
  });
});

describe('a secrets provider that cannot answer', () => {
  it('answers 503 with Retry-After so the sender retries', async () => {
    const store = await openDefaultTestStore();
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 8 });
    try {
      const core = createIngressCore({
        writer,
        secrets: { secretsFor: () => Promise.reject(new Error('store down')) },
        clock: systemClock,
        logger: silentLogger(),
        toleranceSeconds: 300,
        scheme: 'body',
        ackTimeoutMs: 1000,
      });
      const app = express();
      app.use('/hooks', createIngressRouter({ core, logger: silentLogger(), maxBodyBytes: 1024 }));
      const body = JSON.stringify(makeEvent());
      const res = await request(app)
        .post('/hooks/ep_1')
        .set('x-service-signature', sign({ secret: TEST_SECRET, body }))
        .send(body);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      await writer.close();
      await store.cleanup();
    }
  });
});
