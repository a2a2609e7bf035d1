import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adminUrl, createPostgresDatabase } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { freePort, ROOT, spawnCli, waitForHttp } from '../support/process.js';
import { TEST_SECRET } from '../support/receiver.js';

const hasPostgres = Boolean(await adminUrl());
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const API_KEY = 'pk_canary_3b1f0e9a7c5d4e2f';
const PAYLOAD_CANARY = 'payload-canary-5e8d1c';

async function until<T>(what: string, probe: () => T | undefined, diagnostics: () => string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${diagnostics()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `postroom serve` as a real process exporting to `receiver`, delivers one event, and returns the spans received. */
async function deliverTraced(receiver: OtlpReceiver, protocol: string): Promise<{ spans: ReceivedSpan[]; eventId: string }> {
  const database = await createPostgresDatabase();
  cleanups.push(database.drop);
  const port = await freePort();
  const serve = spawnCli(['serve', '--role', 'all', '--handlers', path.join(ROOT, 'test/tracing/fixtures/traced-handlers.js')], {
    DATABASE_URL: database.url,
    PORT: String(port),
    POSTROOM_WEBHOOK_SECRETS: TEST_SECRET,
    POSTROOM_API_KEY: API_KEY,
    POSTROOM_WORKER_POLL_MS: '100',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_SERVICE_NAME: 'postroom-under-test',
    OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  cleanups.push(async () => {
    serve.child.kill('SIGTERM');
    await serve.exited;
  });
  await waitForHttp(`http://127.0.0.1:${port}/readyz`, serve);

  const event = makeEvent({ data: { correspondence_id: 'cor_t1', participant_id: 'par_1', act: 'approved', ref: PAYLOAD_CANARY } });
  const res = await postEvent(`http://127.0.0.1:${port}/webhooks`, event, { secret: TEST_SECRET });
  expect(res.status).toBe(200);
  const diagnostics = (): string => `spans: ${JSON.stringify(receiver.spans.map((s) => s.name))}\npostroom:\n${serve.output()}`;
  await until('the handler span', () => receiver.spans.find((s) => s.name === 'handle participant.acted'), diagnostics);
  return { spans: receiver.spans, eventId: event.event_id };
}

function checkTrace(spans: ReceivedSpan[], eventId: string): void {
  const request = spans.find((s) => s.name === 'POST /webhooks' && s.attributes['messaging.message.id'] === eventId);
  const processing = spans.find((s) => s.name === 'process participant.acted' && s.attributes['messaging.message.id'] === eventId);
  const handler = spans.find((s) => s.name === 'handle participant.acted');
  const flush = spans.find((s) => s.name === 'postroom.inbox.flush' && s.links.some((l) => l.spanId === request?.spanId));
  expect(request, 'the request span').toBeDefined();
  expect(processing, 'the worker span').toBeDefined();
  expect(handler, 'the handler span').toBeDefined();
  expect(flush, 'the flush span, linked to the request').toBeDefined();

  // The handler's span is in the trace of the request that delivered the event, under the worker's span.
  expect(handler!.traceId).toBe(request!.traceId);
  expect(processing!.traceId).toBe(request!.traceId);
  expect(processing!.parentSpanId).toBe(request!.spanId);
  expect(handler!.parentSpanId).toBe(processing!.spanId);
  expect(handler!.attributes['code.function.name']).toBe('recordAct');
  // The request links to the flush that committed it, and the flush to every request it served.
  expect(request!.links).toContainEqual({ traceId: flush!.traceId, spanId: flush!.spanId });

  expect(request!.kind).toBe(2); // SERVER
  expect(processing!.kind).toBe(5); // CONSUMER
  expect(request!.attributes).toMatchObject({
    'messaging.system': 'postroom',
    'messaging.operation.type': 'receive',
    'postroom.event.type': 'participant.acted',
    'postroom.outcome': 'accepted',
    'postroom.signature.result': 'verified',
  });
  expect(processing!.attributes).toMatchObject({ 'messaging.operation.type': 'process', 'postroom.outcome': 'processed' });
  expect(request!.resource['service.name']).toBe('postroom-under-test');

  // No secret, API key, signature or payload field in any attribute of any span.
  const everything = JSON.stringify(spans.map((s) => [s.attributes, s.resource]));
  for (const secret of [TEST_SECRET, API_KEY, PAYLOAD_CANARY, 'par_1', 'approved', 'v1=']) expect(everything).not.toContain(secret);
}

describe.skipIf(!hasPostgres)('traces exported by postroom serve to a real OTLP/HTTP endpoint', () => {
  it.each(['http/protobuf', 'http/json'])(
    'over %s: the handler span shares the request trace',
    async (protocol) => {
      const receiver = await startOtlpReceiver();
      cleanups.push(() => receiver.close());
      const { spans, eventId } = await deliverTraced(receiver, protocol);
      expect([...receiver.contentTypes]).toEqual([protocol === 'http/json' ? 'application/json' : 'application/x-protobuf']);
      checkTrace(spans, eventId);
    },
    60_000,
  );
});
