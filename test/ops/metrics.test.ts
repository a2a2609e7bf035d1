import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import type { RunningServer } from '../../src/app/server.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { freePort } from '../support/process.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

/** Parses the exposition format into `name{labels}` → value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

describe('metrics after a known sequence of requests', () => {
  let store: TestStore;
  let server: RunningServer;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    server = await startReceiver({
      db: store.db,
      env: { POSTROOM_WEBHOOK_SECRETS: `whsec_old,${TEST_SECRET}`, POSTROOM_MAX_BODY_BYTES: '2048' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
  });

  it('counts every outcome with its reason, which secret matched, latency, skew and inbox state', async () => {
    const hook = `${server.url}/webhooks`;
    const a = makeEvent();
    const b = makeEvent();
    await postEvent(hook, a, { secret: TEST_SECRET });
    await postEvent(hook, a, { secret: TEST_SECRET });
    await postEvent(hook, b, { secret: 'whsec_old', timestamp: Math.floor(Date.now() / 1000) - 30 });
    await postEvent(hook, makeEvent(), { secret: 'whsec_nope' });
    await postEvent(hook, makeEvent(), { secret: TEST_SECRET, headers: { 'x-service-signature': '' } });
    await postEvent(hook, makeEvent(), { secret: TEST_SECRET, timestamp: 1 });
    await postEvent(hook, makeEvent(), { secret: TEST_SECRET, headers: { 'x-service-event-id': 'evt_other' } });
    await postEvent(hook, null, { secret: TEST_SECRET, body: 'not json' });
    await postEvent(hook, makeEvent({ data: { pad: 'x'.repeat(3000) } }), { secret: TEST_SECRET });

    const res = await request(`${server.url}/metrics`);
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    const m = parse(await res.body.text());
    const c = (k: string): number | undefined => m.get(k);
    expect(c('postroom_ingress_requests_total{outcome="accepted",reason=""}')).toBe(2);
    expect(c('postroom_ingress_requests_total{outcome="duplicate",reason=""}')).toBe(1);
    expect(c('postroom_ingress_requests_total{outcome="invalid_signature",reason="no_matching_signature"}')).toBe(1);
    expect(c('postroom_ingress_requests_total{outcome="invalid_signature",reason="missing_header"}')).toBe(1);
    expect(c('postroom_ingress_requests_total{outcome="invalid_signature",reason="timestamp_outside_window"}')).toBe(1);
    expect(c('postroom_ingress_requests_total{outcome="mismatched",reason="event_id"}')).toBe(1);
    expect(c('postroom_ingress_requests_total{outcome="quarantined",reason=""}')).toBe(1);
    expect(c('postroom_ingress_requests_total{outcome="too_large",reason=""}')).toBe(1);
    expect(c('postroom_ingress_secret_matches_total{secret="configured:1"}')).toBe(3);
    expect(c('postroom_ingress_secret_matches_total{secret="configured:0"}')).toBe(1);
    expect(c('postroom_ingress_ack_duration_seconds_count{outcome="accepted"}')).toBe(2);
    expect(c('postroom_ingress_clock_skew_abs_seconds_count')).toBe(5);
    expect(c('postroom_inbox_events{status="received"}')).toBe(2);
    expect(c('postroom_inbox_events{status="quarantined"}')).toBe(1);
    expect(c('postroom_inbox_oldest_unprocessed_age_seconds')).toBeGreaterThanOrEqual(0);
    expect([...m.keys()].some((k) => k.startsWith('postroom_build_info{version="0.1.0"'))).toBe(true);
    // Node's process metrics under their stock names, as Node dashboards and alerts expect them.
    expect([...m.keys()].some((k) => k.startsWith('process_resident_memory_bytes'))).toBe(true);
    expect([...m.keys()].some((k) => k.startsWith('nodejs_heap_size_used_bytes'))).toBe(true);
    expect([...m.keys()].some((k) => k.startsWith('postroom_process_') || k.startsWith('postroom_nodejs_'))).toBe(false);
    // One prefix for everything ingress does, and outcomes as an outcome label.
    expect(c('postroom_ingress_batch_rows_count')).toBeGreaterThanOrEqual(1);
    expect(c('postroom_ingress_flush_duration_seconds_count{outcome="committed"}')).toBeGreaterThanOrEqual(1);
    expect([...m.keys()].some((k) => k.startsWith('postroom_ingest_'))).toBe(false);
    expect([...m.keys()].some((k) => /[{,]ok="/.test(k))).toBe(false);
    // No high-cardinality labels: no event id ever appears in a series.
    expect([...m.keys()].some((k) => k.includes(a.event_id))).toBe(false);
  });

  it('reports reconcile state from the database, so restarts and CLI runs cannot reset it', async () => {
    await store.db.query(
      `INSERT INTO reconcile_runs (outcome, finished_at, summary) VALUES ('gaps_open', '2026-11-20T10:00:00Z', '{"at_risk":{"count":3,"sample":[]}}')`,
    );
    await store.db.query(
      `INSERT INTO reconcile_gaps (event_id, event_type, endpoint_id, delivery_id) VALUES ('evt_gap_m1', 'wallet.debited', 'ep_1', 'dlv_1')`,
    );
    const m = parse(await (await request(`${server.url}/metrics`)).body.text());
    expect(m.get('postroom_reconcile_gaps_open')).toBe(1);
    expect(m.get('postroom_reconcile_last_success_timestamp_seconds')).toBe(Date.parse('2026-11-20T10:00:00Z') / 1000);
    expect(m.get('postroom_reconcile_deliveries_at_risk')).toBe(3);
    expect(m.get('postroom_store_up')).toBe(1);
  });

  it("reports the event-id index's size against the database's shared_buffers, read at scrape time", async () => {
    const m = parse(await (await request(`${server.url}/metrics`)).body.text());
    const [index] = (
      await store.db.query<{ bytes: number }>(`SELECT pg_relation_size(to_regclass('inbox_ids_event_id_excl'))::float8 AS bytes`)
    ).rows;
    expect(index!.bytes).toBeGreaterThan(0);
    expect(m.get('postroom_store_event_id_index_bytes')).toBe(index!.bytes);
    const [buffers] = (await store.db.query<{ bytes: number }>(`SELECT pg_size_bytes(current_setting('shared_buffers'))::float8 AS bytes`))
      .rows;
    expect(m.get('postroom_store_shared_buffers_bytes')).toBe(buffers!.bytes);
    expect(buffers!.bytes).toBeGreaterThanOrEqual(128 * 1024);
  });

  it('keeps separate registries per app instance', async () => {
    const other = await startReceiver({ db: store.db, env: { PORT: '0' } });
    try {
      const m = parse(await (await request(`${other.url}/metrics`)).body.text());
      expect(m.get('postroom_ingress_requests_total{outcome="accepted",reason=""}')).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('serves metrics on their own port when POSTROOM_METRICS_PORT is set', async () => {
    const port = await freePort();
    const other = await startReceiver({ db: store.db, env: { POSTROOM_METRICS_PORT: String(port) } });
    try {
      expect((await request(`${other.url}/metrics`)).statusCode).toBe(404);
      const res = await request(`http://127.0.0.1:${port}/metrics`);
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toContain('postroom_build_info');
    } finally {
      await other.close();
    }
  });
});
