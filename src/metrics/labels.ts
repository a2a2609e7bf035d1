/**
 * Event types the spec names. Anything else is reported as `other` so a sender
 * inventing types cannot blow up label cardinality.
 */
export const EVENT_TYPE_LABELS = new Set([
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
]);

export function eventTypeLabel(type: string): string {
  return EVENT_TYPE_LABELS.has(type) ? type : 'other';
}
