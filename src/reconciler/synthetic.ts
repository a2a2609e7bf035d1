import type { EventTrait } from '../events/type-table.js';
import type { EventTypeName } from '../events/type-names.js';
import { inboxRowFromEnvelope } from '../inbox/envelope-row.js';
import type { NewInboxEvent } from '../inbox/types.js';
import type { ProjectedCorrespondence } from '../projection/read.js';
import { createPlanOutput, readFile, type CorrespondencePlan, type ServiceFile, type SyntheticEnvelope } from './synthetic-plan.js';
import {
  writeActs,
  writeClaimsLapsed,
  writeClaimsRedeemed,
  writeDocuments,
  writeSendSummary,
  writeSnapshot,
  writeStatus,
  type Writer,
} from './synthetic-writers.js';

export { syntheticEventId, type Explanation, type ServiceFile } from './synthetic-plan.js';

/**
 * The writer of each type a re-read can show, null where the table says it shows
 * nothing (src/events/type-table.ts). They run in this order: the created snapshot
 * first and acts before claims, since a claim's explanation names the event written
 * for its participant; the events come out in the same order.
 */
const WRITERS: { [T in EventTypeName]: EventTrait<T, 'reread'> extends 'nothing' ? null : Writer<T> } = {
  'correspondence.created': writeSnapshot,
  'participant.acted': writeActs,
  'claim.claimed': writeClaimsRedeemed,
  'claim.expired': writeClaimsLapsed,
  'correspondence.sealed': writeStatus('sealed'),
  'correspondence.withdrawn': writeStatus('withdrawn'),
  'correspondence.send_completed': writeSendSummary,
  'document.attached': writeDocuments,
  'form.response_received': null,
  'wallet.debited': null,
  'campaign.status_changed': null,
  'webhook.test': null,
};

/**
 * Compares the service's file with the projection and returns the synthetic
 * events that bring the projection to the service (each of a catalogue type a
 * handler already understands, `source: reconciler`), and the explanations they
 * give for missed events. Pure: the same inputs always give the same ids.
 */
export function planCorrespondence(
  service: ServiceFile,
  projected: ProjectedCorrespondence | undefined,
  observedAt: Date,
  toleranceMs: number,
): CorrespondencePlan {
  const reading = readFile(service, projected, observedAt, toleranceMs);
  const out = createPlanOutput(service.correspondence_id);
  for (const type of Object.keys(WRITERS) as EventTypeName[]) {
    const write = WRITERS[type] as Writer | null;
    write?.(reading, out, type);
  }
  return { events: out.events, explanations: out.explanations, standing: out.standing };
}

export function toInboxRow(e: SyntheticEnvelope): NewInboxEvent {
  return inboxRowFromEnvelope(e, 'reconciler');
}
