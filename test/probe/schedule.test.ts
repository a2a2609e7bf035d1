import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeComponentFactory } from '../../src/app/probe-component.js';
import type { RunningServer } from '../../src/app/server.js';
import { refreshStoreGauges } from '../../src/app/store-gauges.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { startEndpointReceiver } from '../support/reconcile-e2e.js';

/** `serve`'s scheduled probe: two replicas, one probe at a time, the outcome on every replica's metrics. */
describe('the scheduled probe', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let receiver: RunningServer;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.02], attemptTimeoutMs: 500, seed: 6504 });
    const port = await freePort();
    const ep = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${port}/webhooks` });
    receiver = await startEndpointReceiver(store.db, port, ep.secret);
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await sandbox?.close();
    await store?.cleanup();
  });

  const deps = (env: Record<string, string>) => {
    const config = loadConfig({ NODE_ENV: 'test', POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey, ...env });
    // The setting's floor is a minute; the test ticks faster.
    if (config.probe.intervalMs > 0) config.probe.intervalMs = 30;
    return { config, db: store.db, logger: silentLogger(), metrics: createMetrics({ defaultMetrics: false }), clock: systemClock };
  };

  it('is off unless configured, and off on the live plane unless allowed', async () => {
    expect(probeComponentFactory(deps({}), { role: 'all' })).toBeUndefined();
    expect(probeComponentFactory(deps({ POSTROOM_PROBE_INTERVAL_SECONDS: '60' }), { role: 'ingress' })).toBeUndefined();
    const live = { POSTROOM_PROBE_INTERVAL_SECONDS: '60', POSTROOM_API_KEY: `svc_live_${randomBytes(16).toString('hex')}` };
    expect(probeComponentFactory(deps(live), { role: 'reconciler' })).toBeUndefined();
    const allowed = probeComponentFactory(deps({ ...live, POSTROOM_PROBE_LIVE: 'true' }), { role: 'reconciler' });
    expect(allowed).toBeDefined();
    await allowed!.stop(0);
    expect(() => loadConfig({ NODE_ENV: 'test', POSTROOM_PROBE_INTERVAL_SECONDS: '10' })).toThrow(/at least 60/);
  });

  it('probes on each tick from one replica at a time, and every replica reports the outcome', async () => {
    const replicas = [deps({ POSTROOM_PROBE_INTERVAL_SECONDS: '60' }), deps({ POSTROOM_PROBE_INTERVAL_SECONDS: '60' })];
    const components = replicas.map((d) => probeComponentFactory(d, { role: 'reconciler' })!);
    for (const c of components) await c.start();
    // The minimum interval between probes of an endpoint (10 s) lets the first tick probe and the others skip.
    for (let i = 0; i < 200; i++) {
      const done = await store.db.query(`SELECT 1 FROM probe_runs WHERE outcome = 'ok'`);
      if (done.rows.length > 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    for (const c of components) await c.stop(2000);
    const runs = await store.db.query<{ outcome: string }>('SELECT outcome FROM probe_runs');
    expect(runs.rows).toEqual([{ outcome: 'ok' }]);

    for (const r of replicas) {
      await refreshStoreGauges(r.metrics, store.db);
      const up = await r.metrics.registry.getSingleMetricAsString('postroom_probe_up');
      expect(up).toMatch(/postroom_probe_up\{plane="sandbox",endpoint="we_[^"]+"\} 1/);
    }
  }, 60_000);
});
