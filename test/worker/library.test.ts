import express from 'express';
import { Registry } from 'prom-client';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as api from '../../src/index.js';
import * as service from '../../src/service.js';
import { createPostroom } from '../../src/app/postroom.js';
import { sign } from '../../src/signature/index.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { makeEvent } from '../support/events.js';
import { countByStatus } from './support.js';

const kinds = await availableStoreKinds();
const SECRET = 'whsec_library_0123456789abcdef';

describe.each(kinds)('postroom as a library in your own app (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('receives through postroom.router() in a host Express app and runs the typed handlers', async () => {
    const postroom = await createPostroom({ db: store.db, secrets: [SECRET], worker: { listen: false } });
    const acts: string[] = [];
    postroom.on('participant.acted', (event) => void acts.push(event.data.act));
    const app = express();
    app.use('/integrations/cds/webhooks', postroom.router());
    app.use(express.json());

    const event = makeEvent();
    const body = JSON.stringify(event);
    const res = await request(app)
      .post('/integrations/cds/webhooks')
      .set('content-type', 'application/json')
      .set('x-service-signature', sign({ secret: SECRET, body }))
      .send(body);
    expect(res.status).toBe(200);
    await postroom.drain();
    expect(acts).toEqual(['approved']);
    expect(await countByStatus(store.db)).toMatchObject({ processed: 1 });
    expect(await postroom.projection.get('cor_1')).toMatchObject({
      participants: [{ participant_id: 'par_1', state: 'delivered', last_act: 'approved' }],
    });
    expect(
      await postroom.projection.compare({
        correspondence_id: 'cor_1',
        status: 'live',
        participants: [{ participant_id: 'par_1', state: 'delivered' }],
      }),
    ).toEqual([{ kind: 'field', correspondenceId: 'cor_1', field: 'status', projection: null, service: 'live' }]);
    await postroom.stop(1000);
  });

  it('asks for the signing secret instead of receiving unverified', () => {
    const postroom = createPostroom({ db: store.db });
    expect(() => postroom.router()).toThrow(/need the webhook signing secret/);
  });
});

describe('metrics for an embedder', () => {
  it("counts into the application's registry through createMetrics, and refuses a handle createMetrics did not make", async () => {
    const registry = new Registry();
    const metrics = api.createMetrics({ registry });
    expect(metrics.registry).toBe(registry);
    // Port 9 (discard) refuses the connection: one attempt, counted as a network failure.
    const client = service.createApiClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'svc_sandbox_library', metrics, maxAttempts: 1 });
    await expect(client.me()).rejects.toMatchObject({ code: 'network_error' });
    await client.close();
    expect(await registry.getSingleMetricAsString('postroom_api_requests_total')).toContain(
      'postroom_api_requests_total{operation="me",status_class="network"} 1',
    );
    expect(() => service.createApiClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'svc_sandbox_library', metrics: { registry } })).toThrow(
      api.ConfigError,
    );
  });
});

describe('package exports', () => {
  it('exports one path to each capability: createPostroom, constructEvent, signing, the store and the errors; the client and the reconciler from postroom/service', () => {
    for (const name of [
      'createPostroom',
      'constructEvent',
      'WebhookVerificationError',
      'EventError',
      'sign',
      'captureRawBody',
      'PostroomError',
      'ConfigError',
      'EVENT_CATALOGUE',
      'migrate',
      'createPgDb',
      'createPgliteDb',
      'replayEvent',
    ]) {
      expect(api).toHaveProperty(name);
    }
    for (const name of ['createApiClient', 'ApiError', 'createReconciler', 'auditDelivered', 'recordSentCorrespondence']) {
      expect(service).toHaveProperty(name);
      expect(api).not.toHaveProperty(name);
    }
  });

  it('keeps the lower-level pieces internal (each has a public path above) and the sandbox on its own entry point', () => {
    for (const name of [
      'createWorker',
      'createHandlerRegistry',
      'createIngressRouter',
      'createIngressCore',
      'createInboxWriter',
      'createForwarder',
      'staticSecrets',
      'silentLogger',
      'verifySignature',
      'parseSignatureHeader',
      'getProjectedCorrespondence',
      'listOpenCorrespondenceIds',
      'compareWithService',
      'sentLedger',
      'validateEvent',
      'buildClient',
      'OPERATION_SCOPES',
      'HotCounter',
      'createApiClientFromConfig',
      'workerOptionsFromConfig',
      'migrationStatus',
      'replayMatching',
      'createSandbox',
      'startSandbox',
      'startTraffic',
    ]) {
      expect(api).not.toHaveProperty(name);
    }
  });
});
