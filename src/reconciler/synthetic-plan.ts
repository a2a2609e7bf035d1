import { createHash } from 'node:crypto';
import type { Correspondence, CorrespondenceParticipant } from '../client/types.js';
import type { KnownEnvelope } from '../inbox/envelope-row.js';
import type { ProjectedCorrespondence } from '../projection/read.js';

type ProjectedParticipant = ProjectedCorrespondence['participants'][number];

/** Same facts, same id: a second run (or a concurrent one) writes nothing new. */
export function syntheticEventId(...parts: string[]): string {
  return `rec_${createHash('sha256').update(parts.join('\u001f')).digest('hex').slice(0, 40)}`;
}

/** The envelope (events/catalogue.ts) marked as the reconciler's: `inbox show` tells it from a delivered one. */
export interface SyntheticEnvelope extends KnownEnvelope {
  source: 'reconciler';
}

/**
 * What a re-read showed that the read model lacked: the kind of missed event that
 * would account for it, the window of delivery times such an event could have, and
 * how it was made good. A gap is closed only by one of these (close-gaps.ts).
 */
export interface Explanation {
  explanation_id: string;
  correspondence_id: string;
  event_type: string;
  participant_id: string | null;
  window_from: Date;
  window_to: Date;
  /** Where in the window the event most likely was. */
  anchor: Date;
  /** The anchor is the change's own instant (a creation, an act): a delivery made then is that very event. */
  exact: boolean;
  outcome: 'recovered' | 'state_synced';
  /** Accounts for one missed event (true) or any number (an intermediate act). */
  single: boolean;
  synthetic_event_id: string | null;
  detail: string;
}

export interface CorrespondencePlan {
  events: SyntheticEnvelope[];
  /** Stored: each stands for a difference this re-read found and the event written for it. */
  explanations: Explanation[];
  /**
   * Not stored: what the file shows now, however the read model learned it. An act
   * superseded in the file by a later one the read model has is accounted for
   * here; it holds only for the re-read that produced it.
   */
  standing: Explanation[];
}

/** A file as the service returns it, with when it last changed when the listing says so. */
export type ServiceFile = Correspondence & { updated_at?: string | null };

export const ms = (iso: string | null | undefined): number | null => {
  if (iso == null) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
};

/** One participant of the file beside the read model's view of it. */
export interface ParticipantReading {
  service: CorrespondenceParticipant;
  /** The read model's participant; undefined when it never saw one. */
  mine: ProjectedParticipant | undefined;
  lastAct: string | null;
  lastActAt: number | null;
  becameDelivered: boolean;
  /**
   * A claim code keeps its participant held until it is redeemed or lapses, so only a
   * participant that was held can have changed through a claim. One the read model never
   * saw (its file's created event was missed too) may have been held as well.
   */
  mayHaveBeenHeld: boolean;
  /** The participant.acted written for it in this plan, if one was. */
  actedId: string | null;
}

/** The file, the read model's view of it and the delivery windows its changes allow: what every writer reads. */
export interface FileReading {
  service: ServiceFile;
  projected: ProjectedCorrespondence | undefined;
  observedAt: Date;
  toleranceMs: number;
  /** The file's created_at, when it shows a readable one. */
  created: number | null;
  /** When the file last changed (the listing's updated_at, else when it was read). */
  updated: number;
  earliest: Date;
  latest: Date;
  lastChange: string;
  /** The window of a change known only to lie between the file's creation and its last change (a seal, a summary, a document). */
  broad: { readonly window_from: Date; readonly window_to: Date; readonly anchor: Date; readonly exact: false };
  participants: ParticipantReading[];
  /** The file's documents, distinct and sorted. */
  documents: string[];
  /** The read model applied a correspondence.created for the file. */
  sawCreated: boolean;
  /** Set by the writer of the created snapshot when it writes one. */
  snapshotId: string | null;
}

export function readFile(
  service: ServiceFile,
  projected: ProjectedCorrespondence | undefined,
  observedAt: Date,
  toleranceMs: number,
): FileReading {
  const created = ms(service.created_at);
  const updated = ms(service.updated_at) ?? observedAt.getTime();
  // A delivery is made after its event, and no event of a file precedes the file: windows open at the event's time.
  const earliest = new Date(created ?? 0);
  const latest = new Date(Math.max(updated, created ?? 0) + toleranceMs);
  const mine = new Map((projected?.participants ?? []).map((p) => [p.participant_id, p]));
  return {
    service,
    projected,
    observedAt,
    toleranceMs,
    created,
    updated,
    earliest,
    latest,
    lastChange: new Date(updated).toISOString(),
    broad: { window_from: earliest, window_to: latest, anchor: new Date(updated), exact: false },
    participants: (service.participants ?? []).map((p) => {
      const m = mine.get(p.participant_id);
      return {
        service: p,
        mine: m,
        lastAct: typeof p.last_act === 'string' && p.last_act ? p.last_act : null,
        lastActAt: ms(p.last_act_at),
        becameDelivered: p.state === 'delivered' && (!m || m.state !== 'delivered'),
        mayHaveBeenHeld: m === undefined || m.state === 'held',
        actedId: null,
      };
    }),
    documents: [...new Set(service.document_ids ?? [])].sort(),
    sawCreated: projected !== undefined && projected.created_at !== null,
    snapshotId: null,
  };
}

export type NewExplanation = Omit<Explanation, 'explanation_id' | 'correspondence_id'>;

/** Where writers put what they plan: events, the explanations stored with them, and the standing ones. */
export interface PlanOutput extends CorrespondencePlan {
  /** Adds a synthetic event of `type` for the file; the id is derived from the file, the type and `idParts`. */
  emit(type: string, at: string, data: Record<string, unknown>, ...idParts: string[]): string;
  explain(e: NewExplanation): void;
  explainStanding(e: NewExplanation): void;
}

export function createPlanOutput(correspondenceId: string): PlanOutput {
  const id = correspondenceId;
  const events: SyntheticEnvelope[] = [];
  const explanations: Explanation[] = [];
  const standing: Explanation[] = [];
  const withId = (e: NewExplanation): Explanation => ({
    explanation_id: syntheticEventId(
      id,
      'explains',
      e.event_type,
      e.participant_id ?? '',
      e.window_from.toISOString(),
      e.window_to.toISOString(),
      e.synthetic_event_id ?? '',
      e.detail,
    ),
    correspondence_id: id,
    ...e,
  });
  return {
    events,
    explanations,
    standing,
    emit(type, at, data, ...idParts) {
      const eventId = syntheticEventId(id, type, ...idParts);
      events.push({ event_id: eventId, type, at, source: 'reconciler', data: { correspondence_id: id, ...data, reconciled: true } });
      return eventId;
    },
    explain: (e) => explanations.push(withId(e)),
    explainStanding: (e) => standing.push(withId(e)),
  };
}
