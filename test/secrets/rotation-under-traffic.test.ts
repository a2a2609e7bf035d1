import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { createApiClient } from '../../src/client/index.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { SUBSCRIBABLE_EVENT_TYPES, startSandbox, startTraffic, type Sandbox } from '../../src/sandbox/index.js';
import { createSecretCipher } from '../../src/secrets/crypto.js';
import { describeEndpointSecrets, saveEndpointSecret } from '../../src/secrets/store.js';
import { runCli } from '../support/cli.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';

const ENCRYPTION_KEY = randomBytes(32);
const OVERLAP_SECONDS = 600;

/**
 * The whole path end to end: the sandbox delivers realistic traffic to a real
 * receiver at /webhooks/<endpoint_id>, and the endpoint's secret is rotated twice
 * mid-stream the way an operator would. Every event generated must be in the inbox.
 */
describe('a rotation under continuous traffic from the sandbox', () => {
  let store: TestStore;
  let server: RunningServer;
  let sandbox: Sandbox;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    const config = loadConfig({
      NODE_ENV: 'test',
      PORT: '0',
      POSTROOM_WEBHOOK_SECRETS: 'whsec_configured_not_used_by_the_sandbox',
      POSTROOM_ENCRYPTION_KEY: ENCRYPTION_KEY.toString('hex'),
      POSTROOM_SECRET_OVERLAP_SECONDS: String(OVERLAP_SECONDS),
    });
    server = await startServer({ config, logger: silentLogger(), db: store.db, role: 'ingress' });
    // Retries spread over ~1.5 s, less than the secret cache's TTL: only the change notification can keep
    // a delivery refused while the new secret is on its way from going dead.
    sandbox = await startSandbox({
      allowPrivateTargets: true,
      retrySchedule: [0.05, 0.1, 0.2, 0.4, 0.8],
      attemptTimeoutMs: 2000,
      queueDelayMs: 20,
      seed: 7,
    });
  });
  afterAll(async () => {
    await sandbox?.close();
    await server?.close();
    await store?.cleanup();
  });

  /**
   * On Postgres the operator's own commands do it (`postroom endpoints create|rotate-secret`, a separate
   * connection, as in production). The embedded store cannot be shared with a second opener, so there the
   * same client call and store function the command uses are called in-process.
   */
  function operator() {
    const env = {
      POSTROOM_API_BASE_URL: sandbox.url,
      POSTROOM_API_KEY: sandbox.apiKey,
      POSTROOM_ENCRYPTION_KEY: ENCRYPTION_KEY.toString('hex'),
      POSTROOM_SECRET_OVERLAP_SECONDS: String(OVERLAP_SECONDS),
      ...(store.url ? { DATABASE_URL: store.url } : {}),
    };
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });
    const cipher = createSecretCipher(ENCRYPTION_KEY);
    return {
      async create(): Promise<string> {
        const url = `${server.url}/webhooks/{endpoint_id}`;
        if (store.url) {
          const r = await runCli(['endpoints', 'create', '--url', url, '--events', SUBSCRIBABLE_EVENT_TYPES.join(','), '--json'], env);
          expect(r.code, r.stderr).toBe(0);
          return (JSON.parse(r.stdout) as { endpoint_id: string }).endpoint_id;
        }
        const e = await client.webhookEndpoints.create({
          url: url.replace('{endpoint_id}', '_pending'),
          events: [...SUBSCRIBABLE_EVENT_TYPES],
        });
        await saveEndpointSecret(store.db, cipher, {
          endpointId: e.endpoint_id,
          secret: e.secret,
          overlapSeconds: OVERLAP_SECONDS,
          now: new Date(),
        });
        await client.webhookEndpoints.update(e.endpoint_id, { url: url.replace('{endpoint_id}', e.endpoint_id) });
        return e.endpoint_id;
      },
      async rotate(endpointId: string): Promise<void> {
        if (store.url) {
          const r = await runCli(['endpoints', 'rotate-secret', endpointId, '--json'], env);
          expect(r.code, r.stderr).toBe(0);
          return;
        }
        const r = await client.webhookEndpoints.rotateSecret(endpointId);
        await saveEndpointSecret(store.db, cipher, { endpointId, secret: r.secret, overlapSeconds: OVERLAP_SECONDS, now: new Date() });
      },
      close: () => client.close(),
    };
  }

  it('loses no event', async () => {
    const op = operator();
    try {
      const endpointId = await op.create();
      const traffic = startTraffic({ target: sandbox, seed: 21, ratePerSecond: 250, maxOperations: 450, failureWindows: false });
      const reach = async (operations: number): Promise<void> => {
        while (traffic.counters().operations < operations) await new Promise((r) => setTimeout(r, 10));
      };
      await reach(150);
      const eventsBeforeFirst = sandbox.control.events().length;
      await op.rotate(endpointId);
      await reach(300);
      await op.rotate(endpointId);
      const counters = await traffic.done;
      await sandbox.control.waitForIdle(25_000);

      const generated = sandbox.control.events().filter((e) => e.type !== 'webhook.test');
      expect(counters.errors, counters.lastError).toBe(0);
      expect(eventsBeforeFirst).toBeGreaterThan(50);
      expect(generated.length - eventsBeforeFirst).toBeGreaterThan(100);

      const inbox = await store.db.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE endpoint_id = $1', [endpointId]);
      const received = new Set(inbox.rows.map((r) => r.event_id));
      const missing = generated.filter((e) => !received.has(e.event_id)).map((e) => `${e.event_id} ${e.type}`);
      expect(missing).toEqual([]);
      expect(sandbox.control.stats().deliveries.dead).toBe(0);

      // Two rotations: one current and two previous secrets, both still inside the overlap.
      expect((await describeEndpointSecrets(store.db, endpointId)).map((s) => s.state)).toEqual(['current', 'previous', 'previous']);
      const matches = Object.fromEntries((await server.metrics.secretMatches.get()).values.map((v) => [String(v.labels.secret), v.value]));
      expect(matches[`endpoint:${endpointId}:current`]).toBeGreaterThan(0);
      expect(Object.keys(matches).every((label) => label.startsWith(`endpoint:${endpointId}:`))).toBe(true);
    } finally {
      await op.close();
    }
  });
});
