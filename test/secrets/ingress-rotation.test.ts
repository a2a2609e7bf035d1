import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createSecretCipher } from '../../src/secrets/crypto.js';
import { saveEndpointSecret } from '../../src/secrets/store.js';
import { sign } from '../../src/signature/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';

const KEY = randomBytes(32);

async function deliver(server: RunningServer, path: string, secret: string): Promise<{ status: number; eventId: string }> {
  const eventId = `evt_${randomUUID()}`;
  const body = JSON.stringify({ event_id: eventId, type: 'webhook.test', at: new Date().toISOString(), data: { message: 'hi' } });
  const res = await request(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-signature': sign({ secret, body }),
      'x-service-event-id': eventId,
      'x-service-event-type': 'webhook.test',
    },
    body,
  });
  await res.body.dump();
  return { status: res.statusCode, eventId };
}

async function matches(server: RunningServer): Promise<Record<string, number>> {
  const m = await server.metrics.secretMatches.get();
  return Object.fromEntries(m.values.map((v) => [String(v.labels.secret), v.value]));
}

describe('ingress with stored endpoint secrets', () => {
  let store: TestStore;
  let server: RunningServer;
  const cipher = createSecretCipher(KEY);

  beforeAll(async () => {
    store = await openDefaultTestStore();
    const config = loadConfig({
      NODE_ENV: 'test',
      PORT: '0',
      POSTROOM_WEBHOOK_SECRETS: 'whsec_configured',
      POSTROOM_ENCRYPTION_KEY: KEY.toString('hex'),
    });
    server = await startServer({ config, logger: silentLogger(), db: store.db, role: 'ingress' });
  });
  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
  });

  it('POST /webhooks keeps verifying with the configured secrets', async () => {
    expect((await deliver(server, '/webhooks', 'whsec_configured')).status).toBe(200);
    expect((await deliver(server, '/webhooks', 'whsec_other')).status).toBe(401);
  });

  it("POST /webhooks/{id} verifies with that endpoint's stored secret, and only with it", async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_ing_1', secret: 'whsec_stored_1', overlapSeconds: 600, now: new Date() });
    expect((await deliver(server, '/webhooks/ep_ing_1', 'whsec_stored_1')).status).toBe(200);
    expect((await deliver(server, '/webhooks/ep_ing_1', 'whsec_configured')).status).toBe(401);
    const row = await store.db.query<{ endpoint_id: string }>(`SELECT endpoint_id FROM inbox WHERE endpoint_id = 'ep_ing_1'`);
    expect(row.rowCount).toBe(1);
  });

  it('after a rotation both secrets verify during the overlap, and the metric tells them apart', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_ing_2', secret: 'whsec_v1', overlapSeconds: 600, now: new Date() });
    expect((await deliver(server, '/webhooks/ep_ing_2', 'whsec_v1')).status).toBe(200);
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_ing_2', secret: 'whsec_v2', overlapSeconds: 600, now: new Date() });
    // The notification invalidates the cache; until it lands v1 is still current, so wait for v2 to verify.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await deliver(server, '/webhooks/ep_ing_2', 'whsec_v2')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
    expect((await deliver(server, '/webhooks/ep_ing_2', 'whsec_v1')).status).toBe(200);
    const m = await matches(server);
    expect(m['endpoint:ep_ing_2:current']).toBeGreaterThanOrEqual(2);
    expect(m['endpoint:ep_ing_2:previous']).toBe(1);
    expect(Object.keys(m).join(' ')).not.toMatch(/whsec_/);
  });
});
