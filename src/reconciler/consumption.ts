import { isKnownEventType } from '../events/catalogue.js';
import type { RecordedConsumption } from '../worker/consumer-queries.js';

/**
 * Types whose effect the projection keeps in a field it compares with the
 * service (docs/events.md): a missed one matters even with no handler.
 * form.response_received changes nothing the file shows; wallet and campaign
 * events have no correspondence at all.
 */
export const PROJECTION_EFFECT_TYPES: readonly string[] = [
  'correspondence.created',
  'correspondence.send_completed',
  'participant.acted',
  'document.attached',
  'correspondence.sealed',
  'correspondence.withdrawn',
  'claim.claimed',
  'claim.expired',
];

/**
 * Whether anything consumes a type: the projection, a handler for it, a handler
 * for every event (the forwarder), a catch-all for types the catalogue does not
 * know, or the operator's list (POSTROOM_RECONCILE_CONSUMED_TYPES).
 */
export function consumedBy(recorded: RecordedConsumption, extra: readonly string[]): (type: string) => boolean {
  const always = new Set([...PROJECTION_EFFECT_TYPES, ...extra]);
  return (type) => always.has(type) || recorded.everyType || recorded.types.has(type) || (recorded.unknownTypes && !isKnownEventType(type));
}
