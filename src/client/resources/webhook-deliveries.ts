import { iteratePages } from '../paging.js';
import type { CallOptions, ListDeliveriesParams, Page, WebhookDelivery } from '../types.js';
import { expectArray, expectObject, nextCursorOf } from '../validate.js';
import type { ResourceContext } from './context.js';

export function webhookDeliveriesResource(ctx: ResourceContext) {
  /** One page of GET /webhook-deliveries; the filters apply in the query, so a filtered page is a full page. */
  const list = async (params: ListDeliveriesParams = {}, options: CallOptions = {}): Promise<Page<WebhookDelivery>> => {
    const res = await ctx.transport.send({
      operation: 'webhookDeliveries.list',
      method: 'GET',
      path: '/webhook-deliveries',
      query: { limit: params.limit, status: params.status, endpoint_id: params.endpoint_id, cursor: params.cursor },
      signal: options.signal,
    });
    const body = expectObject('webhookDeliveries.list', res.status, res.body);
    const items = expectArray('webhookDeliveries.list', res.status, body, ['deliveries']) as WebhookDelivery[];
    return { items, nextCursor: nextCursorOf('webhookDeliveries.list', res.status, body) };
  };

  return {
    list,
    /** `for await (const d of client.webhookDeliveries.iterate({ status: 'dead' }))`: every match, one page in memory at a time. */
    iterate(params: ListDeliveriesParams = {}, options: CallOptions = {}): AsyncGenerator<WebhookDelivery, void, undefined> {
      return iteratePages('webhookDeliveries.list', (p) => list(p, options), params);
    },
  };
}
