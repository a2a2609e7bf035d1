/**
 * The event types the catalogue knows, by name only. Metrics labels, and so
 * every role, need the names, not the schemas: loading the schemas loads zod
 * (95 modules), which ingress never uses. events/catalogue.ts holds a schema
 * for each name, and the compiler checks that the two lists agree.
 */
export const EVENT_TYPE_NAMES = [
  'correspondence.created',
  'correspondence.send_completed',
  'participant.acted',
  'document.attached',
  'form.response_received',
  'correspondence.sealed',
  'correspondence.withdrawn',
  'claim.claimed',
  'claim.expired',
  'wallet.debited',
  'campaign.status_changed',
  'webhook.test',
] as const;

export type EventTypeName = (typeof EVENT_TYPE_NAMES)[number];

/** The type the service sends when asked to test an endpoint (POST /webhook-endpoints/{id}/test): what `postroom probe` sends. */
export const TEST_EVENT_TYPE = 'webhook.test' satisfies EventTypeName;
