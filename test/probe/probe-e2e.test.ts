import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import type { RunningServer } from '../../src/app/server.js';
import { createApiClient } from '../../src/client/client.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { runProbe, type ProbeOptions } from '../../src/probe/probe.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli } from '../support/cli.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { startEndpointReceiver } from '../support/reconcile-e2e.js';

const pg = await adminUrl();

/**
 * The probe against the sandbox over real HTTP: a working endpoint, and one broken in each way a probe can
 * name (the API refusing, a URL pointing nowhere, a secret postroom does not hold, a URL answering 200 for an
 * application that is not postroom).
 */
describe.skipIf(!pg)('postroom probe with the sandbox', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let postroom: Postroom;
  const servers: RunningServer[] = [];
  let impostor: http.Server;
  const handled: string[] = [];
  let env: Record<string, string>;

  const register = async (url: string) => sandbox.control.registerEndpoint({ url });
  const probe = (options: ProbeOptions, metrics?: ReturnType<typeof createMetrics>) =>
    runProbe(
      {
        db: store.db,
        api: createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey }),
        logger: silentLogger(),
        clock: systemClock,
        ...(metrics ? { metrics } : {}),
      },
      { timeoutMs: 2000, pollMs: 20, ...options },
    );

  beforeAll(async () => {
    store = await openTestStore('postgres');
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.02, 0.02], attemptTimeoutMs: 500, seed: 6503 });
    env = { DATABASE_URL: store.url!, POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey };
    // Handlers of the organisation: one for test events, one for every event.
    postroom = createPostroom({ db: store.db, logger: silentLogger(), worker: { pollIntervalMs: 20 } });
    postroom.on('webhook.test', (event) => void handled.push(`test:${event.event_id}`));
    postroom.onEvery((event) => void handled.push(`every:${event.event_id}`));
    await postroom.start();
    impostor = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
  }, 60_000);

  afterAll(async () => {
    await postroom?.stop(2000);
    for (const s of servers) await s.close();
    await new Promise((resolve) => impostor?.close(resolve));
    await sandbox?.close();
    await store?.cleanup();
  });

  it('reports the round trip of an endpoint that works, and no handler sees the probe event', async () => {
    const port = await freePort();
    const ep = await register(`http://127.0.0.1:${port}/webhooks`);
    servers.push(await startEndpointReceiver(store.db, port, ep.secret));

    const run = await runCli(['probe', '--json', '--endpoint', ep.endpoint_id, '--timeout', '10s'], env);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ plane: 'sandbox', ok: true });
    const [result] = report.endpoints;
    expect(result).toMatchObject({ endpoint_id: ep.endpoint_id, outcome: 'ok', detail: null });
    expect(result.round_trip_ms).toBeGreaterThanOrEqual(0);
    expect(sandbox.control.event(result.event_id).type).toBe('webhook.test');

    await postroom.drain();
    const row = await store.db.query<{ status: string }>('SELECT status FROM inbox WHERE event_id = $1', [result.event_id]);
    expect(row.rows[0]!.status).toBe('processed');
    expect(handled).toEqual([]);

    // A test event someone asks for by hand still reaches the handlers.
    const manual = await runCli(['endpoints', 'test', ep.endpoint_id, '--json'], env);
    expect(manual.code, manual.stderr).toBe(0);
    const manualId = JSON.parse(manual.stdout).response.event_id as string;
    for (let i = 0; i < 200 && !handled.includes(`every:${manualId}`); i++) {
      await postroom.drain();
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(handled).toEqual([`test:${manualId}`, `every:${manualId}`]);

    // Right after, the same endpoint is not probed again; concurrently, only one probe is in flight.
    const again = await probe({ endpoints: [ep.endpoint_id] });
    expect(again.endpoints[0]).toMatchObject({ outcome: 'skipped' });
    expect(again.endpoints[0]!.detail).toContain('probed less than 10 s ago');
    const [a, b] = await Promise.all([
      probe({ endpoints: [ep.endpoint_id], minIntervalMs: 0 }),
      probe({ endpoints: [ep.endpoint_id], minIntervalMs: 0 }),
    ]);
    expect([a.endpoints[0]!.outcome, b.endpoints[0]!.outcome].sort()).toEqual(['ok', 'skipped']);
  }, 60_000);

  it('names the step that failed: API refused, never delivered, signature refused, not stored', async () => {
    const nowhere = await register(`http://127.0.0.1:${await freePort()}/webhooks`);
    const wrongPort = await freePort();
    const wrongSecret = await register(`http://127.0.0.1:${wrongPort}/webhooks`);
    servers.push(await startEndpointReceiver(store.db, wrongPort, `whsec_${randomBytes(24).toString('base64')}`));
    const notPostroom = await register(`http://127.0.0.1:${(impostor.address() as { port: number }).port}/webhooks`);

    const metrics = createMetrics({ defaultMetrics: false });
    const report = await probe(
      { endpoints: ['we_does_not_exist', nowhere.endpoint_id, wrongSecret.endpoint_id, notPostroom.endpoint_id] },
      metrics,
    );
    expect(report.ok).toBe(false);
    const by = new Map(report.endpoints.map((e) => [e.endpoint_id, e]));
    expect(by.get('we_does_not_exist')).toMatchObject({ outcome: 'api_refused' });
    expect(by.get('we_does_not_exist')!.detail).toMatch(/404/);
    expect(by.get(nowhere.endpoint_id)).toMatchObject({ outcome: 'never_delivered' });
    expect(by.get(nowhere.endpoint_id)!.detail).toMatch(/ECONNREFUSED/);
    expect(by.get(wrongSecret.endpoint_id)).toMatchObject({ outcome: 'signature_refused' });
    expect(by.get(wrongSecret.endpoint_id)!.detail).toContain('rotate-secret');
    expect(by.get(notPostroom.endpoint_id)).toMatchObject({ outcome: 'not_stored' });
    for (const e of report.endpoints) expect(e.round_trip_ms).toBeNull();
    const counted = await metrics.registry.getSingleMetricAsString('postroom_probe_runs_total');
    for (const outcome of ['api_refused', 'never_delivered', 'signature_refused', 'not_stored'])
      expect(counted).toContain(`postroom_probe_runs_total{outcome="${outcome}"} 1`);

    // The CLI says so with exit 2, and the step in its table.
    const cli = await runCli(['probe', '--endpoint', 'we_also_missing'], env);
    expect(cli.code).toBe(2);
    expect(cli.stdout).toContain('api_refused');
  }, 60_000);

  it('does not probe the live plane unless asked to', async () => {
    const liveKey = `svc_live_${randomBytes(16).toString('hex')}`;
    const live = await startSandbox({ allowPrivateTargets: true, keys: [liveKey] });
    try {
      const cli = await runCli(['probe'], { ...env, POSTROOM_API_BASE_URL: live.url, POSTROOM_API_KEY: liveKey });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain('--live');
    } finally {
      await live.close();
    }
  }, 30_000);
});
