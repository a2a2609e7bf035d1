import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { startTracing, type Tracing } from '../../src/app/tracing.js';
import { createApiClient } from '../../src/client/index.js';
import { loadTracingConfig } from '../../src/config/tracing.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createReconciler } from '../../src/reconciler/reconcile.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { freePort } from '../support/process.js';
import { settle as settleWorker, startEndpointReceiver } from '../support/reconcile-e2e.js';

const pg = await adminUrl();

/**
 * A reconcile run under a registered SDK (the one `serve` registers, exporting to a real OTLP/HTTP endpoint):
 * the run's span holds its re-reads and its API calls, and the worker's processing of the synthetic event it
 * wrote is in the same trace.
 */
describe.skipIf(!pg)('a traced reconcile run', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let otlp: OtlpReceiver;
  let tracing: Tracing | undefined;
  let postroom: Postroom;
  let receiver: RunningServer | undefined;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    tracing = await startTracing(
      loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' }),
      silentLogger(),
    );
    store = await openTestStore('postgres', { poolSize: 6 });
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.05], attemptTimeoutMs: 500, seed: 20261206 });
    postroom = createPostroom({ db: store.db, logger: silentLogger(), worker: { concurrency: 1, pollIntervalMs: 20 } });
    await postroom.start();
  }, 60_000);

  afterAll(async () => {
    await postroom?.stop(2000);
    await receiver?.close();
    await tracing?.shutdown();
    await sandbox?.close();
    await store?.cleanup();
    await otlp?.close();
  });

  it('puts re-reads, API calls and the synthetic event processing in the run trace', async () => {
    const port = await freePort();
    const endpoint = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${port}/webhooks` });
    // Nothing listens at the endpoint: the file's creation goes dead, a gap for the reconciler to fill.
    const res = await fetch(`${sandbox.url}/sender/v2/correspondence`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json', 'x-sandbox-send-mode': 'direct' },
      body: JSON.stringify({
        kind: 'letter',
        subject: 'Traced',
        content_type: 'text/plain',
        document_ids: [],
        recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, ref: 'r-traced' }],
      }),
    });
    expect(res.status).toBeLessThan(300);
    await sandbox.control.waitForIdle(20_000);
    expect(sandbox.control.deliveries({ status: 'dead', limit: 10 }).deliveries.length).toBeGreaterThan(0);
    receiver = await startEndpointReceiver(store.db, port, endpoint.secret);

    const api = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey, logger: silentLogger() });
    const reconciler = createReconciler({ db: store.db, api, logger: silentLogger(), clock: { now: () => Date.now() } });
    const run = await reconciler.run();
    expect(run.ran && run.summary.synthetic_events_written).toBeGreaterThan(0);
    await settleWorker(postroom, store.db);
    await api.close();

    const deadline = Date.now() + 10_000;
    const find = () => otlp.spans.find((s) => s.name === 'postroom.reconcile');
    while ((!find() || !otlp.spans.some((s) => s.attributes['postroom.event.source'] === 'reconciler')) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const runSpan = find();
    expect(runSpan, JSON.stringify(otlp.spans.map((s) => s.name))).toBeDefined();
    const inRun = otlp.spans.filter((s) => s.traceId === runSpan!.traceId);
    const reread = inRun.find((s) => s.name === 'postroom.reconcile.reread' && Number(s.attributes['postroom.synthetic.written'] ?? 0) > 0);
    expect(reread, 'a re-read that wrote a synthetic event').toBeDefined();
    expect(inRun.some((s) => s.kind === 3 && s.attributes['postroom.api.operation'] !== undefined)).toBe(true); // CLIENT
    const processed = inRun.find((s) => s.name.startsWith('process ') && s.attributes['postroom.event.source'] === 'reconciler');
    expect(processed, 'the synthetic event processed in the run trace').toBeDefined();
    expect(processed!.parentSpanId).toBe(reread!.spanId);
    expect(runSpan!.attributes['postroom.reconcile.synthetic_written']).toBeGreaterThan(0);

    const everything = JSON.stringify(otlp.spans.map((s) => s.attributes));
    expect(everything).not.toContain(sandbox.apiKey);
    expect(everything).not.toContain('12345678901');
  }, 90_000);
});
