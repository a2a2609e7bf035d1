import { Router } from 'express';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../catalogue.js';
import { toRecord, type DeliveryStore } from '../deliveries.js';
import type { EndpointService } from '../endpoints.js';
import { apiErrors } from '../errors.js';
import { endpointView } from '../state.js';
import type { IdempotencyStore } from '../idempotency.js';
import type { Triggers } from '../trigger.js';
import { operation, parseLimit, queryParam } from './http.js';

export const PAGE_LIMITS = { default: 100, max: 1000 } as const;

/** Webhook endpoints and the delivery log. */
export function createWebhooksRouter(deps: {
  endpoints: EndpointService;
  deliveries: DeliveryStore;
  triggers: Triggers;
  idempotency: IdempotencyStore;
}): Router {
  const r = Router();
  const idem = { idempotency: deps.idempotency };
  const body = (raw: unknown): Record<string, unknown> => (raw ?? {}) as Record<string, unknown>;

  // Every operation acts within the caller's plane: the other plane's endpoints and deliveries are 404.
  r.post(
    '/webhook-endpoints',
    operation(
      'webhooks.write',
      async (req, caller) => ({ status: 201, body: await deps.endpoints.create(body(req.body), caller.plane) }),
      idem,
    ),
  );
  r.get(
    '/webhook-endpoints',
    operation('webhooks.read', (req, caller) => ({
      status: 200,
      body: deps.endpoints.list({ limit: parseLimit(req, PAGE_LIMITS), cursor: queryParam(req, 'cursor') }, caller.plane),
    })),
  );
  r.get(
    '/webhook-endpoints/:endpoint_id',
    operation('webhooks.read', (req, caller) => ({
      status: 200,
      body: endpointView(deps.endpoints.get(String(req.params.endpoint_id), caller.plane)),
    })),
  );
  r.patch(
    '/webhook-endpoints/:endpoint_id',
    operation('webhooks.write', async (req, caller) => ({
      status: 200,
      body: await deps.endpoints.update(String(req.params.endpoint_id), body(req.body), caller.plane),
    })),
  );
  r.delete(
    '/webhook-endpoints/:endpoint_id',
    operation('webhooks.write', (req, caller) => {
      deps.endpoints.remove(String(req.params.endpoint_id), caller.plane);
      return { status: 204 };
    }),
  );
  r.post(
    '/webhook-endpoints/:endpoint_id/rotate-secret',
    operation(
      'webhooks.write',
      (req, caller) => ({ status: 200, body: deps.endpoints.rotateSecret(String(req.params.endpoint_id), caller.plane) }),
      idem,
    ),
  );
  r.post(
    '/webhook-endpoints/:endpoint_id/test',
    operation(
      'webhooks.write',
      (req, caller) => {
        const endpointId = String(req.params.endpoint_id);
        const event = deps.triggers.test(endpointId, caller.plane);
        const d = deps.deliveries.latestFor(endpointId);
        return {
          status: 202,
          body: {
            endpoint_id: endpointId,
            event_id: event.event_id,
            event_type: event.type,
            delivery_id: d?.eventId === event.event_id ? d.deliveryId : null,
          },
        };
      },
      idem,
    ),
  );

  r.get(
    '/webhook-deliveries',
    operation('webhooks.read', (req, caller) => {
      const limit = parseLimit(req, PAGE_LIMITS);
      const status = queryParam(req, 'status');
      if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status))
        throw apiErrors.invalid('status', `expected one of ${DELIVERY_STATUSES.join(', ')}`);
      const endpointId = queryParam(req, 'endpoint_id');
      if (endpointId !== undefined && (endpointId === '' || endpointId.length > 128))
        throw apiErrors.invalid('endpoint_id', 'expected an endpoint id');
      const page = deps.deliveries.page({
        limit,
        status: status as DeliveryStatus | undefined,
        endpointId,
        cursor: queryParam(req, 'cursor'),
        plane: caller.plane,
      });
      return { status: 200, body: { deliveries: page.deliveries.map(toRecord), next_cursor: page.nextCursor } };
    }),
  );
  r.get(
    '/webhook-deliveries/:delivery_id',
    operation('webhooks.read', (req, caller) => {
      const d = deps.deliveries.get(String(req.params.delivery_id));
      if (!d || d.plane !== caller.plane) throw apiErrors.notFound('webhook delivery', String(req.params.delivery_id));
      return { status: 200, body: toRecord(d) };
    }),
  );
  return r;
}
