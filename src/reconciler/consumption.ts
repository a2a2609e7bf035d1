import { isKnownEventType } from '../events/catalogue.js';
import { eventTypeTraits } from '../events/type-table.js';
import type { RecordedConsumption } from '../worker/consumer-queries.js';

/**
 * Whether anything consumes a type: the projection (for the types whose effect it
 * compares with the service, src/events/type-table.ts), a handler for it, a handler
 * for every event (the forwarder), a catch-all for types the catalogue does not
 * know, or the operator's list (POSTROOM_RECONCILE_CONSUMED_TYPES).
 */
export function consumedBy(recorded: RecordedConsumption, extra: readonly string[]): (type: string) => boolean {
  const listed = new Set(extra);
  return (type) =>
    eventTypeTraits(type)?.consumed === 'always' ||
    listed.has(type) ||
    recorded.everyType ||
    recorded.types.has(type) ||
    (recorded.unknownTypes && !isKnownEventType(type));
}
