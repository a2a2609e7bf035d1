import { describe, expect, it } from 'vitest';
import type { ApiError, WebhookDelivery } from '../../src/client/index.js';
import { caught, mockedClient } from './support.js';

function delivery(n: number): WebhookDelivery {
  return {
    delivery_id: `dl_${n}`,
    endpoint_id: 'ep_1',
    event_id: `evt_${n}`,
    event_type: 'participant.acted',
    status: 'dead',
    attempts: 8,
    last_error: '503',
    created_at: '2026-11-18T10:00:00Z',
  };
}

describe('cursor paging', () => {
  it('iterate() follows next_cursor across several pages, keeping the filters and limit on every page', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-deliveries?limit=2&status=dead&endpoint_id=ep_1', 200, {
      deliveries: [delivery(1), delivery(2)],
      next_cursor: 'c2',
    });
    m.reply('GET', '/sender/v2/webhook-deliveries?limit=2&status=dead&endpoint_id=ep_1&cursor=c2', 200, {
      deliveries: [delivery(3), delivery(4)],
      next_cursor: 'c3',
    });
    m.reply('GET', '/sender/v2/webhook-deliveries?limit=2&status=dead&endpoint_id=ep_1&cursor=c3', 200, {
      deliveries: [delivery(5)],
      next_cursor: null,
    });
    const seen: string[] = [];
    for await (const d of m.client.webhookDeliveries.iterate({ status: 'dead', endpoint_id: 'ep_1', limit: 2 })) seen.push(d.delivery_id);
    expect(seen).toEqual(['dl_1', 'dl_2', 'dl_3', 'dl_4', 'dl_5']);
    expect(m.calls).toHaveLength(3);
    for (const c of m.calls) {
      const q = new URL(`https://x${c.path}`).searchParams;
      expect(q.get('status')).toBe('dead');
      expect(q.get('endpoint_id')).toBe('ep_1');
      expect(q.get('limit')).toBe('2');
    }
  });

  it('fetches the next page only when the caller asks for more (one page in memory at a time)', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-deliveries', 200, { deliveries: [delivery(1), delivery(2)], next_cursor: 'c2' });
    m.reply('GET', '/sender/v2/webhook-deliveries?cursor=c2', 200, { deliveries: [delivery(3)], next_cursor: null });
    const it = m.client.webhookDeliveries.iterate();
    expect((await it.next()).value?.delivery_id).toBe('dl_1');
    expect((await it.next()).value?.delivery_id).toBe('dl_2');
    expect(m.calls).toHaveLength(1);
    expect((await it.next()).value?.delivery_id).toBe('dl_3');
    expect(m.calls).toHaveLength(2);
    expect((await it.next()).done).toBe(true);
  });

  it('breaking out of the loop stops fetching', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-deliveries', 200, { deliveries: [delivery(1), delivery(2)], next_cursor: 'c2' });
    for await (const d of m.client.webhookDeliveries.iterate()) if (d.delivery_id === 'dl_1') break;
    expect(m.calls).toHaveLength(1);
  });

  it('list() is one page, and a page in the middle can be fetched by cursor', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-deliveries?limit=1&cursor=c9', 200, { deliveries: [delivery(9)], next_cursor: 'c10' });
    expect(await m.client.webhookDeliveries.list({ limit: 1, cursor: 'c9' })).toEqual({ items: [delivery(9)], nextCursor: 'c10' });
  });

  it('endpoint lists accept endpoints, data or items as the array name', async () => {
    const e = (id: string) => ({
      endpoint_id: id,
      url: 'https://h.example/x',
      events: [],
      active: true,
      created_at: '2026-11-18T10:00:00Z',
    });
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-endpoints?limit=1', 200, { data: [e('ep_1')], next_cursor: 'a' });
    m.reply('GET', '/sender/v2/webhook-endpoints?limit=1&cursor=a', 200, { items: [e('ep_2')], next_cursor: 'b' });
    m.reply('GET', '/sender/v2/webhook-endpoints?limit=1&cursor=b', 200, { endpoints: [e('ep_3')] });
    const ids: string[] = [];
    for await (const x of m.client.webhookEndpoints.iterate({ limit: 1 })) ids.push(x.endpoint_id);
    expect(ids).toEqual(['ep_1', 'ep_2', 'ep_3']);
  });

  it('a service that returns the cursor it was given ends the walk with an error instead of looping', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-deliveries', 200, { deliveries: [delivery(1)], next_cursor: 'same' });
    m.reply('GET', '/sender/v2/webhook-deliveries?cursor=same', 200, { deliveries: [delivery(2)], next_cursor: 'same' });
    const seen: string[] = [];
    const err = (await caught(
      (async () => {
        for await (const d of m.client.webhookDeliveries.iterate()) seen.push(d.delivery_id);
      })(),
    )) as ApiError;
    expect(err.code).toBe('invalid_response');
    expect(seen).toEqual(['dl_1', 'dl_2']);
  });

  it('a page without the deliveries array is an invalid_response', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-deliveries', 200, { results: [] });
    expect(((await caught(m.client.webhookDeliveries.list())) as ApiError).code).toBe('invalid_response');
  });
});
