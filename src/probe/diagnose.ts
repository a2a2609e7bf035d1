import type { ListDeliveriesParams, Page, WebhookDelivery } from '../client/types.js';
import type { ProbeOutcome } from './defaults.js';
import { TEST_EVENT_TYPE } from '../events/type-names.js';

/** The part of the API client a diagnosis reads. */
export interface DeliveryLog {
  webhookDeliveries: { list(params?: ListDeliveriesParams): Promise<Page<WebhookDelivery>> };
}

const MAX_PAGES = 20;

/**
 * Why a probe's event was not stored in time, from the service's delivery log: its delivery still pending or
 * dead with a 401 means postroom refused the signature; pending or dead otherwise means it never arrived (the
 * URL, the network, postroom refusing for another reason); no pending or dead record of an event the service
 * named means the service calls it delivered while postroom has not stored it. Without an event id, the newest
 * webhook.test delivery created since the probe began is taken for it.
 */
export async function diagnoseProbe(
  api: DeliveryLog,
  p: { endpointId: string; eventId: string | null; since: Date },
): Promise<{ outcome: Exclude<ProbeOutcome, 'ok' | 'api_refused'>; detail: string }> {
  const record = await findDelivery(api, p);
  if (record) {
    const error = record.last_error ? record.last_error.slice(0, 300) : '';
    if (/\b401\b/.test(error))
      return {
        outcome: 'signature_refused',
        detail:
          `postroom refused the signature of delivery ${record.delivery_id} (${error}): the endpoint's signing secret is not one postroom holds. ` +
          'Rotate it with `postroom endpoints rotate-secret`, or set the secret the service shows in POSTROOM_WEBHOOK_SECRETS.',
      };
    return {
      outcome: 'never_delivered',
      detail:
        `delivery ${record.delivery_id} is ${record.status} after ${record.attempts} attempt(s)` +
        `${error ? `: ${error}` : ', no attempt finished yet'}. Check the endpoint's URL (\`postroom endpoints list\`) and that postroom's ingress is reachable from the service.`,
    };
  }
  if (p.eventId)
    return {
      outcome: 'not_stored',
      detail: `the service lists no pending or dead delivery of ${p.eventId}, so it took the event as delivered, yet postroom has not stored it. Run \`postroom audit --since 1h\`.`,
    };
  return {
    outcome: 'never_delivered',
    detail: 'the service named no event and its log shows no webhook.test delivery to this endpoint since the probe began.',
  };
}

async function findDelivery(
  api: DeliveryLog,
  p: { endpointId: string; eventId: string | null; since: Date },
): Promise<WebhookDelivery | undefined> {
  let newest: WebhookDelivery | undefined;
  for (const status of ['pending', 'dead'] as const) {
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await api.webhookDeliveries.list({ status, endpoint_id: p.endpointId, limit: 200, ...(cursor ? { cursor } : {}) });
      for (const d of page.items) {
        if (p.eventId) {
          if (d.event_id === p.eventId) return d;
        } else if (d.event_type === TEST_EVENT_TYPE && Date.parse(d.created_at) >= p.since.getTime()) {
          if (!newest || Date.parse(d.created_at) > Date.parse(newest.created_at)) newest = d;
        }
      }
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
  }
  return newest;
}
