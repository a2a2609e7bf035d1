import { ApiError } from '../errors.js';
import { iteratePages } from '../paging.js';
import type {
  CallOptions,
  CreateEndpointInput,
  IdempotentCallOptions,
  Page,
  PageParams,
  RotatedEndpointSecret,
  UpdateEndpointInput,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from '../types.js';
import { expectArray, expectObject, expectString, firstString, invalidResponse, nextCursorOf } from '../validate.js';
import { segment, type ResourceContext } from './context.js';

/** The spec shows the list as cursor-paged but not the array's name; these are accepted, in order. */
export const ENDPOINT_LIST_FIELDS = ['endpoints', 'data', 'items'] as const;
/** The field carrying a rotated secret is not shown either. */
export const ROTATED_SECRET_FIELDS = ['secret', 'signing_secret', 'new_secret'] as const;

export function webhookEndpointsResource(ctx: ResourceContext) {
  const list = async (params: PageParams = {}, options: CallOptions = {}): Promise<Page<WebhookEndpoint>> => {
    const res = await ctx.transport.send({
      operation: 'webhookEndpoints.list',
      method: 'GET',
      path: '/webhook-endpoints',
      query: { limit: params.limit, cursor: params.cursor },
      signal: options.signal,
    });
    const body = expectObject('webhookEndpoints.list', res.status, res.body);
    const items = expectArray('webhookEndpoints.list', res.status, body, ENDPOINT_LIST_FIELDS) as WebhookEndpoint[];
    return { items, nextCursor: nextCursorOf('webhookEndpoints.list', res.status, body) };
  };

  return {
    /** POST /webhook-endpoints. The answer holds the signing secret, the only time the service shows it. */
    async create(input: CreateEndpointInput, options: IdempotentCallOptions = {}): Promise<WebhookEndpointWithSecret> {
      const res = await ctx.transport.send({
        operation: 'webhookEndpoints.create',
        method: 'POST',
        path: '/webhook-endpoints',
        body: { url: input.url, events: input.events },
        idempotencyKey: options.idempotencyKey ?? ctx.newIdempotencyKey(),
        signal: options.signal,
      });
      const body = expectObject('webhookEndpoints.create', res.status, res.body);
      expectString('webhookEndpoints.create', res.status, body, 'endpoint_id');
      expectString('webhookEndpoints.create', res.status, body, 'secret');
      return { ...body, events: Array.isArray(body.events) ? body.events : input.events } as WebhookEndpointWithSecret;
    },

    list,

    /** Every endpoint, one page in memory at a time. */
    iterate(params: PageParams = {}, options: CallOptions = {}): AsyncGenerator<WebhookEndpoint, void, undefined> {
      return iteratePages('webhookEndpoints.list', (p) => list(p, options), params);
    },

    /**
     * PATCH: the body sets absolute values, so sending it twice leaves the same
     * endpoint; it is retried like a GET.
     * Returns the updated endpoint, or undefined when the service answers without a body.
     */
    async update(endpointId: string, patch: UpdateEndpointInput, options: CallOptions = {}): Promise<WebhookEndpoint | undefined> {
      const body: Record<string, unknown> = {};
      if (patch.url !== undefined) body.url = patch.url;
      if (patch.events !== undefined) body.events = patch.events;
      const res = await ctx.transport.send({
        operation: 'webhookEndpoints.update',
        method: 'PATCH',
        path: `/webhook-endpoints/${segment('endpointId', endpointId)}`,
        body,
        signal: options.signal,
      });
      if (res.body === undefined) return undefined;
      return expectObject('webhookEndpoints.update', res.status, res.body) as WebhookEndpoint;
    },

    /**
     * DELETE, retried like a GET. When an earlier attempt's answer was lost, the
     * endpoint may already be gone: a 404 on a later attempt then means success.
     */
    async delete(endpointId: string, options: CallOptions = {}): Promise<void> {
      try {
        await ctx.transport.send({
          operation: 'webhookEndpoints.delete',
          method: 'DELETE',
          path: `/webhook-endpoints/${segment('endpointId', endpointId)}`,
          signal: options.signal,
        });
      } catch (err) {
        if (err instanceof ApiError && err.code === 'not_found' && err.attempts > 1) return;
        throw err;
      }
    },

    /**
     * POST …/rotate-secret with an Idempotency-Key (a replay answers with the same
     * secret instead of minting another). The service stops the old secret at once.
     */
    async rotateSecret(endpointId: string, options: IdempotentCallOptions = {}): Promise<RotatedEndpointSecret> {
      const res = await ctx.transport.send({
        operation: 'webhookEndpoints.rotateSecret',
        method: 'POST',
        path: `/webhook-endpoints/${segment('endpointId', endpointId)}/rotate-secret`,
        idempotencyKey: options.idempotencyKey ?? ctx.newIdempotencyKey(),
        signal: options.signal,
      });
      const body = expectObject('webhookEndpoints.rotateSecret', res.status, res.body);
      const secret = firstString(body, ROTATED_SECRET_FIELDS);
      if (secret === undefined) {
        throw invalidResponse(
          'webhookEndpoints.rotateSecret',
          res.status,
          `no secret in the answer (looked for ${ROTATED_SECRET_FIELDS.join(', ')}; fields present: ${Object.keys(body).join(', ') || 'none'})`,
        );
      }
      return { ...body, endpoint_id: typeof body.endpoint_id === 'string' ? body.endpoint_id : endpointId, secret };
    },

    /** POST …/test: one signed webhook.test delivery, sent whatever the endpoint subscribes to. */
    async test(endpointId: string, options: IdempotentCallOptions = {}): Promise<Record<string, unknown> | undefined> {
      const res = await ctx.transport.send({
        operation: 'webhookEndpoints.test',
        method: 'POST',
        path: `/webhook-endpoints/${segment('endpointId', endpointId)}/test`,
        idempotencyKey: options.idempotencyKey ?? ctx.newIdempotencyKey(),
        signal: options.signal,
      });
      return res.body === undefined ? undefined : expectObject('webhookEndpoints.test', res.status, res.body);
    },
  };
}
