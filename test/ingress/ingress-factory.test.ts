import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import { loadConfig } from '../../src/config/config.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { INGRESS_DEFAULTS } from '../../src/ingress/defaults.js';
import { createIngress, type Ingress } from '../../src/ingress/ingress.js';
import { staticSecrets } from '../../src/secrets/secret-provider.js';
import { sign } from '../../src/signature/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { errorCode, rawRequest } from '../support/raw-http.js';
import { TEST_SECRET } from '../support/receiver.js';

function listen(listener: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(listener);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

/** The handler in front of a stand-in app that notes each target it is handed and answers it 204. */
function listenChained(ingress: Ingress, seen: string[]): ReturnType<typeof listen> {
  return listen((req, res) =>
    ingress.handler(req, res, () => {
      seen.push(req.url ?? '');
      res.writeHead(204).end();
    }),
  );
}

describe('one ingress factory', () => {
  let store: TestStore;
  let ingress: Ingress;
  let bare: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    store = await openDefaultTestStore();
    ingress = createIngress({ db: store.db, secrets: staticSecrets([TEST_SECRET]) });
    bare = await listen(ingress.handler);
  });
  afterAll(async () => {
    await bare?.close();
    await ingress?.writer.close();
    await store?.cleanup();
  });

  it('the environment starts from the same defaults', () => {
    const { ingress: c } = loadConfig({}, '/tmp');
    expect({
      maxBatch: c.maxBatch,
      toleranceSeconds: c.toleranceSeconds,
      scheme: c.signedPayload,
      ackTimeoutMs: c.ackTimeoutMs,
      maxBodyBytes: c.maxBodyBytes,
    }).toEqual({
      maxBatch: INGRESS_DEFAULTS.maxBatch,
      toleranceSeconds: INGRESS_DEFAULTS.toleranceSeconds,
      scheme: INGRESS_DEFAULTS.scheme,
      ackTimeoutMs: INGRESS_DEFAULTS.ackTimeoutMs,
      maxBodyBytes: INGRESS_DEFAULTS.maxBodyBytes,
    });
    expect(INGRESS_DEFAULTS).toMatchObject({
      maxBatch: 256,
      toleranceSeconds: 300,
      scheme: 'body',
      ackTimeoutMs: 5000,
      maxBodyBytes: 1024 * 1024,
    });
  });

  it('the Node handler alone (no framework) stores a signed delivery at /webhooks and at /webhooks/{endpoint_id}', async () => {
    for (const path of ['/webhooks', '/webhooks/', '/webhooks/ep_1', '/WEBHOOKS/ep_1/?x=1']) {
      const event = makeEvent();
      const res = await postEvent(`${bare.url}${path}`, event, { secret: TEST_SECRET });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 200, body: { status: 'accepted' } });
      expect((await getInboxEvent(store.db, event.event_id))?.status).toBe('received');
    }
  });

  it('routes an absolute-form target and one with a fragment by their path, as Express does, and hands on what is not a webhook unchanged', async () => {
    for (const target of ['http://127.0.0.1/webhooks', 'HTTP://x:1/webhooks/ep_1?x=1', '/webhooks/ep_1#f', '/webhooks?x=1#f']) {
      const event = makeEvent();
      const body = JSON.stringify(event);
      const res = await rawRequest(bare.url, 'POST', target, {
        body,
        headers: { 'content-type': 'application/json', 'x-service-signature': sign({ secret: TEST_SECRET, body }) },
      });
      expect({ target, status: res.status, body: res.body }).toEqual({ target, status: 200, body: JSON.stringify({ status: 'accepted' }) });
      expect((await getInboxEvent(store.db, event.event_id))?.status).toBe('received');
    }
    // With no app behind it, such a target that is not a webhook is the handler's own JSON 404.
    const alone = [];
    for (const target of ['http://x/healthz', '/healthz#f', 'http://x/webhooks/a/b']) {
      const r = await rawRequest(bare.url, 'GET', target);
      alone.push([target, r.status, errorCode(r)]);
    }
    expect(alone).toEqual([
      ['http://x/healthz', 404, 'not_found'],
      ['/healthz#f', 404, 'not_found'],
      ['http://x/webhooks/a/b', 404, 'not_found'],
    ]);
    const seen: string[] = [];
    const chained = await listenChained(ingress, seen);
    try {
      for (const target of ['http://x/healthz', '/healthz#f', 'http://x/webhooks/a/b']) {
        expect((await rawRequest(chained.url, 'GET', target)).status).toBe(204);
      }
      expect(seen).toEqual(['http://x/healthz', '/healthz#f', 'http://x/webhooks/a/b']);
    } finally {
      await chained.close();
    }
  });

  it('answers every webhook target itself: 405 for other methods, 404 for ids that name nothing, and hands other paths on', async () => {
    const answers = [];
    for (const [method, target] of [
      ['GET', '/webhooks'],
      ['GET', '/webhooks//'],
      ['PUT', '/webhooks/ep_1'],
      ['GET', '/webhooks/%ZZ'],
      ['POST', '/webhooks/%ZZ'],
      ['POST', '/webhooks/a%20b'],
      ['POST', '/webhooks/a/b'],
      ['GET', '/healthz'],
      ['POST', '/webhooksX'],
    ] as const) {
      const r = await rawRequest(bare.url, method, target, { body: method === 'GET' ? '' : '{}' });
      answers.push([method, target, r.status, errorCode(r), r.headers.allow]);
    }
    expect(answers).toEqual([
      ['GET', '/webhooks', 405, 'method_not_allowed', 'POST'],
      ['GET', '/webhooks//', 405, 'method_not_allowed', 'POST'],
      ['PUT', '/webhooks/ep_1', 405, 'method_not_allowed', 'POST'],
      ['GET', '/webhooks/%ZZ', 404, 'unknown_endpoint', undefined],
      ['POST', '/webhooks/%ZZ', 404, 'unknown_endpoint', undefined],
      ['POST', '/webhooks/a%20b', 404, 'unknown_endpoint', undefined],
      ['POST', '/webhooks/a/b', 404, 'not_found', undefined],
      ['GET', '/healthz', 404, 'not_found', undefined],
      ['POST', '/webhooksX', 404, 'not_found', undefined],
    ]);

    const seen: string[] = [];
    const chained = await listenChained(ingress, seen);
    try {
      expect((await rawRequest(chained.url, 'GET', '/healthz')).status).toBe(204);
      expect((await rawRequest(chained.url, 'GET', '/webhooks')).status).toBe(405);
      expect(seen).toEqual(['/healthz']);
    } finally {
      await chained.close();
    }
  });

  it('createPostroom().router() uses the same defaults (a body one byte over 1 MiB is refused)', async () => {
    const { default: express } = await import('express');
    const postroom = createPostroom({ db: store.db, secrets: [TEST_SECRET] });
    const app = express();
    app.use('/hooks', postroom.router());
    const server = await listen(app);
    try {
      const res = await postEvent(`${server.url}/hooks`, null, {
        secret: TEST_SECRET,
        body: 'x'.repeat(INGRESS_DEFAULTS.maxBodyBytes + 1),
      });
      expect(res.status).toBe(413);
      expect(res.body.error?.message).toContain(String(INGRESS_DEFAULTS.maxBodyBytes));
    } finally {
      await server.close();
      await postroom.stop();
    }
  });
});
