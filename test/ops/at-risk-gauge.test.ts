import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import type { RunningServer } from '../../src/app/server.js';
import { createApiClient } from '../../src/client/client.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createReconciler } from '../../src/reconciler/reconcile.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { startReceiver } from '../support/receiver.js';

/** The value of one unlabelled series in the exposition text. */
function gauge(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('postroom_reconcile_deliveries_at_risk', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let server: RunningServer;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    sandbox = await startSandbox({ seed: 64, allowPrivateTargets: true });
    server = await startReceiver({ db: store.db });
  });
  afterAll(async () => {
    await server?.close();
    await sandbox?.close();
    await store?.cleanup();
  });

  it('reports what the last reconcile run counted as at risk', async () => {
    const api = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });
    try {
      const ep = await sandbox.control.registerEndpoint({ url: 'http://127.0.0.1:9/down' });
      sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 4, status: 'pending' });
      // An hour from now, every pending delivery is older than the default threshold.
      const later = { now: () => Date.now() + 3_600_000 };
      const result = await createReconciler({ db: store.db, api, logger: silentLogger(), clock: later }).run({
        endpoints: [ep.endpoint_id],
      });
      expect(result.ran && result.summary.at_risk.count).toBe(4);

      const text = await (await request(`${server.url}/metrics`)).body.text();
      expect(gauge(text, 'postroom_reconcile_deliveries_at_risk')).toBe(4);
    } finally {
      await api.close();
    }
  });
});
