import { EVENT_TYPE_NAMES } from '../events/type-names.js';

/**
 * Event types the catalogue knows. Anything else is reported as `other` so a
 * sender inventing types cannot blow up label cardinality.
 */
export const EVENT_TYPE_LABELS: ReadonlySet<string> = new Set<string>(EVENT_TYPE_NAMES);

export function eventTypeLabel(type: string): string {
  return EVENT_TYPE_LABELS.has(type) ? type : 'other';
}
