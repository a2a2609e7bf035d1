import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { EVENT_TYPES, type Sandbox } from '../../src/sandbox/index.js';
import type { SignedPayloadScheme } from '../../src/signature/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { call, letter, NIN, sandbox } from './helpers.js';

/**
 * The real receiver verifies everything the sandbox signs: every event generated,
 * of every type, lands in the inbox once and unquarantined, duplicates and
 * reordering included.
 */
describe.each<SignedPayloadScheme>(['body', 'timestamp.body'])('the receiver accepts what the sandbox signs (%s)', (scheme) => {
  let store: TestStore;
  let receiver: RunningServer;
  let sb: Sandbox;
  let endpointId: string;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    // Each plane's events go only to that plane's endpoints (wallet.debited is the live plane's), so one endpoint per plane.
    sb = await sandbox({
      keys: ['svc_sandbox_receiver', 'svc_live_receiver'],
      signedPayload: scheme,
      seed: 99,
      retrySchedule: [0.05, 0.1, 0.2, 0.4],
      faults: { duplicateRate: 0.2, reorderRate: 0.2, reorderDelayMs: 50, maxDelayMs: 10 },
    });
    // The secret is shown once, at create time: register first, start the receiver with it, then point the endpoint at it.
    const created = await Promise.all(
      sb.apiKeys.map((key) =>
        call(sb.url, 'POST', '/sender/v2/webhook-endpoints', {
          key,
          body: { url: 'http://127.0.0.1:9/pending', events: EVENT_TYPES.filter((t) => t !== 'webhook.test') },
        }),
      ),
    );
    endpointId = created[0]!.body.endpoint_id;
    receiver = await startServer({
      config: loadConfig({
        PORT: '0',
        POSTROOM_WEBHOOK_SECRETS: created.map((c) => c.body.secret).join(','),
        POSTROOM_SIGNED_PAYLOAD: scheme,
        NODE_ENV: 'test',
      }),
      logger: silentLogger(),
      db: store.db,
    });
    for (const [i, key] of sb.apiKeys.entries()) {
      const patched = await call(sb.url, 'PATCH', `/sender/v2/webhook-endpoints/${created[i]!.body.endpoint_id}`, {
        key,
        body: { url: `${receiver.url}/webhooks` },
      });
      expect(patched.status).toBe(200);
    }
  });
  afterAll(async () => {
    await sb?.close();
    await receiver?.close();
    await store?.cleanup();
  });

  it('stores every generated event exactly once', async () => {
    for (const type of EVENT_TYPES) sb.control.trigger(type, { count: 3 });
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: sb.apiKey,
      body: letter([
        { nin: NIN.delivered, ref: 'a' },
        { nin: NIN.held, ref: 'b' },
      ]),
    });
    sb.control.verifyRecipient({ type: 'nin', nin: NIN.held });
    sb.control.act(res.body.participants[0].participant_id, 'signed');
    await call(sb.url, 'POST', `/sender/v2/webhook-endpoints/${endpointId}/test`, { key: sb.apiKey });
    await sb.control.waitForIdle(20_000);

    const generated = sb.control.events();
    expect(new Set(generated.map((e) => e.type))).toEqual(new Set(EVENT_TYPES));
    const deliveries = sb.control.deliveries({ limit: 1000 }).deliveries;
    expect(deliveries).toHaveLength(generated.length);
    expect(deliveries.filter((d) => d.status !== 'delivered')).toEqual([]);
    // Duplicates were sent: more attempts than events, yet one row each.
    expect(deliveries.reduce((n, d) => n + d.attempts, 0)).toBeGreaterThan(generated.length);

    const rows = await store.db.query<{ event_id: string; type: string; status: string; correspondence_id: string | null }>(
      'SELECT event_id, type, status, correspondence_id FROM inbox ORDER BY event_id',
    );
    expect(rows.rows.map((r) => r.event_id)).toEqual(generated.map((e) => e.event_id).sort());
    const byId = new Map(generated.map((e) => [e.event_id, e]));
    for (const r of rows.rows) {
      expect(r.status).toBe('received');
      expect(r.type).toBe(byId.get(r.event_id)!.type);
      expect(r.correspondence_id).toBe(byId.get(r.event_id)!.correspondence_id);
    }
  });
});
