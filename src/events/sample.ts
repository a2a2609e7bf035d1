import { randomUUID } from 'node:crypto';
import type { EventTypeName } from './type-names.js';

/** The type samples and examples show: the one the service sends most. */
export const SAMPLE_EVENT_TYPE = 'participant.acted' satisfies EventTypeName;

/**
 * A realistic envelope with a fresh event id and a SAMPLE_EVENT_TYPE's data,
 * under `type` (data of that shape also satisfies the types that need only a
 * correspondence_id).
 */
export function sampleEnvelope(type: string = SAMPLE_EVENT_TYPE): {
  event_id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
} {
  return {
    event_id: `evt_sample_${randomUUID()}`,
    type,
    at: new Date().toISOString(),
    data: { correspondence_id: 'cor_sample_1', participant_id: 'par_sample_1', act: 'delivered', ref: 'sample-recipient' },
  };
}
