import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryRecord, Sandbox } from '../../src/sandbox/index.js';
import { call, captureServer, sandbox, type CaptureServer } from './helpers.js';

const KEY = 'svc_sandbox_deliveries_test';

async function walk(sb: Sandbox, query: string): Promise<{ records: DeliveryRecord[]; pages: number[] }> {
  const records: DeliveryRecord[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  do {
    const res = await call(
      sb.url,
      'GET',
      `/sender/v2/webhook-deliveries?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { key: KEY },
    );
    expect(res.status).toBe(200);
    records.push(...res.body.deliveries);
    pages.push(res.body.deliveries.length);
    cursor = res.body.next_cursor;
  } while (cursor);
  return { records, pages };
}

const ordered = (records: DeliveryRecord[]): boolean =>
  records.every(
    (r, i) =>
      i === 0 ||
      records[i - 1]!.created_at < r.created_at ||
      (records[i - 1]!.created_at === r.created_at && records[i - 1]!.delivery_id < r.delivery_id),
  );

describe('GET /webhook-deliveries', () => {
  let sb: Sandbox;
  let ok: CaptureServer;
  let failing: CaptureServer;
  let okId: string;
  let failId: string;

  beforeAll(async () => {
    ok = await captureServer(() => 200);
    failing = await captureServer(() => 503);
    sb = await sandbox({ keys: [KEY], retrySchedule: [] });
    okId = (await sb.control.registerEndpoint({ url: ok.url })).endpoint_id;
    failId = (await sb.control.registerEndpoint({ url: failing.url })).endpoint_id;
    // Interleave so every filter has to skip records of the other kinds.
    sb.control.trigger('correspondence.created', { count: 12 });
    await sb.control.waitForIdle();
  });
  afterAll(async () => {
    await sb.close();
    await ok.close();
    await failing.close();
  });

  it('records deliveries exactly as the spec lists them', async () => {
    const { records } = await walk(sb, 'limit=1000');
    const delivered = records.find((r) => r.endpoint_id === okId)!;
    expect(Object.keys(delivered).sort()).toEqual(
      ['attempts', 'created_at', 'delivered_at', 'delivery_id', 'endpoint_id', 'event_id', 'event_type', 'last_error', 'status'].sort(),
    );
    expect(delivered).toMatchObject({ status: 'delivered', attempts: 1, last_error: '', delivered_at: expect.stringMatching(/Z$/) });
    const dead = records.find((r) => r.endpoint_id === failId)!;
    expect(dead).toMatchObject({ status: 'dead', attempts: 1, delivered_at: null });
    expect(dead.last_error).toMatch(/^HTTP 503/);
  });

  it('pages with status and endpoint_id filters: every page full, all matches once, in order', async () => {
    // 12 files × (1 created + 2 acted) events × 2 endpoints = 72 deliveries; 36 dead, all on the failing endpoint.
    const all = await walk(sb, 'limit=1000');
    expect(all.records).toHaveLength(72);

    const dead = await walk(sb, 'limit=5&status=dead');
    expect(dead.pages).toEqual([5, 5, 5, 5, 5, 5, 5, 1]);
    expect(dead.records.every((r) => r.status === 'dead' && r.endpoint_id === failId)).toBe(true);
    expect(new Set(dead.records.map((r) => r.delivery_id)).size).toBe(36);
    expect(ordered(dead.records)).toBe(true);

    const byEndpoint = await walk(sb, `limit=7&endpoint_id=${okId}`);
    expect(byEndpoint.pages).toEqual([7, 7, 7, 7, 7, 1]);
    expect(byEndpoint.records.every((r) => r.endpoint_id === okId)).toBe(true);

    const both = await walk(sb, `limit=10&endpoint_id=${okId}&status=delivered`);
    expect(both.pages).toEqual([10, 10, 10, 6]);
    expect(ordered(both.records)).toBe(true);
    expect((await walk(sb, `limit=10&endpoint_id=${okId}&status=dead`)).records).toEqual([]);
    expect((await walk(sb, 'limit=10&endpoint_id=we_unknown')).records).toEqual([]);
  });

  it('keeps a cursor valid while records change status, and walks deliveries created meanwhile', async () => {
    const first = await call(sb.url, 'GET', '/sender/v2/webhook-deliveries?limit=70', { key: KEY });
    sb.control.trigger('correspondence.created');
    await sb.control.waitForIdle();
    const rest = await walk(sb, `limit=100&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(rest.records).toHaveLength(2 + 6);
  });

  it('refuses bad query values with 400 naming the parameter', async () => {
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['status=failed', 'status'],
      ['cursor=abc', 'cursor'],
      ['status=dead&status=pending', 'status'],
    ] as const) {
      const res = await call(sb.url, 'GET', `/sender/v2/webhook-deliveries?${q}`, { key: KEY });
      expect(res.status, q).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field });
    }
  });

  it('lists endpoints cursor-paged too', async () => {
    for (let i = 0; i < 3; i++) await sb.control.registerEndpoint({ url: ok.url, events: [] });
    const first = await call(sb.url, 'GET', '/sender/v2/webhook-endpoints?limit=2', { key: KEY });
    expect(first.body.endpoints).toHaveLength(2);
    const second = await call(sb.url, 'GET', `/sender/v2/webhook-endpoints?limit=2&cursor=${first.body.next_cursor}`, { key: KEY });
    const third = await call(sb.url, 'GET', `/sender/v2/webhook-endpoints?limit=2&cursor=${second.body.next_cursor}`, { key: KEY });
    expect(third.body.next_cursor).toBeNull();
    const ids = [...first.body.endpoints, ...second.body.endpoints, ...third.body.endpoints].map(
      (e: { endpoint_id: string }) => e.endpoint_id,
    );
    expect(new Set(ids).size).toBe(5);
  });
});

describe('bulk-seeded deliveries', () => {
  it('seeds 100,000 dead deliveries and walks them in full pages, filtered from other records', async () => {
    const sb = await sandbox({ keys: [KEY] });
    try {
      const a = (await sb.control.registerEndpoint({ url: 'http://127.0.0.1:9/a' })).endpoint_id;
      const b = (await sb.control.registerEndpoint({ url: 'http://127.0.0.1:9/b' })).endpoint_id;
      const seeded = await call(sb.url, 'POST', '/sandbox/seed-deliveries', {
        key: KEY,
        body: { endpoint_id: a, count: 100_000, status: 'dead' },
      });
      expect(seeded.status).toBe(201);
      expect(seeded.body.count).toBe(100_000);
      sb.control.seedDeliveries({ endpointId: b, count: 500, status: 'dead' });
      sb.control.seedDeliveries({ endpointId: a, count: 300, status: 'delivered' });

      let seen = 0;
      let pages = 0;
      let cursor: string | null = null;
      let last = '';
      do {
        const res = await call(
          sb.url,
          'GET',
          `/sender/v2/webhook-deliveries?status=dead&endpoint_id=${a}&limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
          { key: KEY },
        );
        const page = res.body.deliveries as DeliveryRecord[];
        pages++;
        if (res.body.next_cursor) expect(page).toHaveLength(1000);
        let inOrder = true;
        for (const d of page) {
          inOrder &&= d.delivery_id > last;
          last = d.delivery_id;
        }
        expect(inOrder).toBe(true);
        expect(page.every((d) => d.endpoint_id === a && d.status === 'dead' && d.last_error !== '')).toBe(true);
        seen += page.length;
        cursor = res.body.next_cursor;
      } while (cursor);
      expect(seen).toBe(100_000);
      expect(pages).toBe(100);
      expect(sb.control.stats().deliveries).toMatchObject({ dead: 100_500, delivered: 300, total: 100_800 });
    } finally {
      await sb.close();
    }
  });

  it('refuses a seed for an unknown endpoint or an absurd count', async () => {
    const sb = await sandbox({ keys: [KEY] });
    try {
      expect(
        (await call(sb.url, 'POST', '/sandbox/seed-deliveries', { key: KEY, body: { endpoint_id: 'we_nope', count: 5 } })).status,
      ).toBe(404);
      const ep = await sb.control.registerEndpoint({ url: 'http://127.0.0.1:9/a' });
      const bad = await call(sb.url, 'POST', '/sandbox/seed-deliveries', { key: KEY, body: { endpoint_id: ep.endpoint_id, count: 0 } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.field).toBe('count');
    } finally {
      await sb.close();
    }
  });
});
