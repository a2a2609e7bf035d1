import { createHash } from 'node:crypto';
import type { Correspondence } from '../client/types.js';
import { inboxRowFromEnvelope, type KnownEnvelope } from '../inbox/envelope-row.js';
import type { NewInboxEvent } from '../inbox/types.js';
import type { ProjectedCorrespondence } from '../projection/read.js';
import { stateRank, statusRank } from '../projection/rules.js';

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
 * how it was made good. A gap is closed only by one of these (reconcile.ts).
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
   * the file no longer shows (superseded by a later one the read model has) is
   * accounted for here; it holds only for the re-read that produced it.
   */
  standing: Explanation[];
}

/** A file as the service returns it, with when it last changed when the listing says so. */
export type ServiceFile = Correspondence & { updated_at?: string | null };

const ms = (iso: string | null | undefined): number | null => {
  if (iso == null) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
};

/**
 * Compares the service's file with the projection and returns the synthetic
 * events that bring the projection to the service (each of a catalogue type a
 * handler already understands, `source: reconciler`), and the explanations they
 * give for missed events. Pure: the same inputs always give the same ids.
 *
 * - A projection that never applied correspondence.created, or lacks fields only
 *   the file itself shows (kind, subject, content_type, documents, participants and
 *   their refs, states with no event of their own such as held), gets a
 *   correspondence.created snapshot; the projection merges it under its
 *   never-backwards rules.
 * - A participant's latest act the projection has not seen: participant.acted with
 *   that act at its time. Earlier acts in between cannot be reproduced (the file
 *   shows only the last one): they are state_synced.
 * - sealed / withdrawn, a changed send summary and attached documents: their own
 *   event types.
 * - A claim code that lapsed or was redeemed has no event to reproduce (no claim
 *   id on the file): state_synced through the participant's state.
 */
export function planCorrespondence(
  service: ServiceFile,
  projected: ProjectedCorrespondence | undefined,
  observedAt: Date,
  toleranceMs: number,
): CorrespondencePlan {
  const id = service.correspondence_id;
  const events: SyntheticEnvelope[] = [];
  const explanations: Explanation[] = [];
  const standing: Explanation[] = [];
  const observed = observedAt.getTime();
  const created = ms(service.created_at);
  const updated = ms(service.updated_at) ?? observed;
  // A delivery is made after its event, and no event of a file precedes the file: windows open at the event's time.
  const earliest = new Date(created ?? 0);
  const latest = new Date(Math.max(updated, created ?? 0) + toleranceMs);
  const lastChange = new Date(updated).toISOString();
  // A change known only to lie between the file's creation and its last change (a seal, a summary, a document).
  const broad = { window_from: earliest, window_to: latest, anchor: new Date(updated), exact: false } as const;

  const explain = (e: Omit<Explanation, 'explanation_id' | 'correspondence_id'>, into: Explanation[] = explanations): void => {
    const explanationId = syntheticEventId(
      id,
      'explains',
      e.event_type,
      e.participant_id ?? '',
      e.window_from.toISOString(),
      e.window_to.toISOString(),
      e.synthetic_event_id ?? '',
      e.detail,
    );
    into.push({ explanation_id: explanationId, correspondence_id: id, ...e });
  };
  const emit = (type: string, at: string, data: Record<string, unknown>, ...idParts: string[]): string => {
    const eventId = syntheticEventId(id, type, ...idParts);
    events.push({ event_id: eventId, type, at, source: 'reconciler', data: { correspondence_id: id, ...data, reconciled: true } });
    return eventId;
  };

  const claimExplanation = (
    type: 'claim.claimed' | 'claim.expired',
    participantId: string | null,
    syntheticId: string | null,
    nth = 0,
  ): void => {
    const who = participantId ? `participant ${participantId}` : `a participant (${nth + 1} beyond the send's counts)`;
    const became =
      type === 'claim.claimed' ? 'delivered (a redeemed claim code delivers)' : 'undeliverable (a lapsed claim code makes it so)';
    explain({
      event_type: type,
      participant_id: participantId,
      ...broad,
      outcome: 'state_synced',
      single: true,
      synthetic_event_id: syntheticId,
      detail: `${who} went from held to ${became}; the claim event itself cannot be reproduced`,
    });
  };
  const mine = new Map((projected?.participants ?? []).map((p) => [p.participant_id, p]));
  const participants = service.participants ?? [];
  const documents = [...new Set(service.document_ids ?? [])].sort();
  const sawCreated = projected !== undefined && projected.created_at !== null;
  const projectedDocs = new Set(projected?.document_ids ?? []);

  const fileDiffers =
    !sawCreated ||
    (projected.kind ?? null) !== (service.kind ?? null) ||
    (projected.subject ?? null) !== (service.subject ?? null) ||
    (projected.content_type ?? null) !== (service.content_type ?? null) ||
    (created !== null && ms(projected.created_at) !== created);
  const participantsDiffer = participants.some((p) => {
    const m = mine.get(p.participant_id);
    if (!m) return true;
    if (m.ref === null && p.ref) return true;
    // Delivered comes as participant.acted; other states (held, undeliverable) have no event of their own.
    return p.state !== 'delivered' && stateRank(m.state) < stateRank(p.state);
  });

  let snapshotId: string | null = null;
  if (fileDiffers || participantsDiffer) {
    const snapshotParticipants = participants.map((p) => ({ participant_id: p.participant_id, ref: p.ref, state: p.state }));
    const status = statusRank(service.status) >= 1 ? 'live' : service.status;
    snapshotId = emit(
      'correspondence.created',
      service.created_at ?? observedAt.toISOString(),
      {
        kind: service.kind,
        subject: service.subject,
        ...(service.content_type === undefined ? {} : { content_type: service.content_type }),
        ...(service.created_at === undefined ? {} : { created_at: service.created_at }),
        document_ids: documents,
        status,
        participants: snapshotParticipants,
      },
      'snapshot',
      status,
      service.kind ?? '',
      service.subject ?? '',
      service.content_type ?? '',
      service.created_at ?? '',
      documents.join(','),
      ...snapshotParticipants.map((p) => `${p.participant_id}=${p.state}/${p.ref ?? ''}`),
    );
  }
  if (!sawCreated) {
    explain({
      event_type: 'correspondence.created',
      participant_id: null,
      window_from: created === null ? earliest : new Date(created),
      window_to: created === null ? latest : new Date(created + toleranceMs),
      anchor: new Date(created ?? updated),
      exact: created !== null,
      outcome: 'recovered',
      single: true,
      synthetic_event_id: snapshotId,
      detail: `the file was created at ${service.created_at ?? '(time not shown)'}; a correspondence.created snapshot was written`,
    });
  }

  for (const p of participants) {
    const m = mine.get(p.participant_id);
    const lastAct = typeof p.last_act === 'string' && p.last_act ? p.last_act : null;
    const lastActAt = ms(p.last_act_at);
    const mineAt = ms(m?.last_act_at);
    const becameDelivered = p.state === 'delivered' && (!m || m.state !== 'delivered');
    let actedId: string | null = null;
    // Two acts can share a millisecond, and ids do not order them: at the read model's own instant a different
    // act is the one the service shows last, so it is written too (it wins the tie, migrations/011).
    const actMissing = mineAt === null || (lastActAt !== null && (lastActAt > mineAt || (lastActAt === mineAt && m?.last_act !== lastAct)));
    if (lastAct !== null && lastActAt !== null && actMissing) {
      const at = new Date(lastActAt).toISOString();
      // The event carries the service's own instant: one finer than a millisecond must still follow the act
      // the read model has in that millisecond. The id takes the millisecond, as it always has.
      actedId = emit(
        'participant.acted',
        p.last_act_at ?? at,
        { participant_id: p.participant_id, act: lastAct, ref: p.ref },
        p.participant_id,
        lastAct,
        at,
      );
      explain({
        event_type: 'participant.acted',
        participant_id: p.participant_id,
        window_from: new Date(lastActAt),
        window_to: new Date(lastActAt + toleranceMs),
        anchor: new Date(lastActAt),
        exact: true,
        outcome: 'recovered',
        single: true,
        synthetic_event_id: actedId,
        detail: `participant ${p.participant_id} acted "${lastAct}" at ${at}; participant.acted written`,
      });
    } else if (becameDelivered) {
      actedId = emit(
        'participant.acted',
        lastChange,
        { participant_id: p.participant_id, act: 'delivered', ref: p.ref },
        p.participant_id,
        'delivered',
      );
      explain({
        event_type: 'participant.acted',
        participant_id: p.participant_id,
        ...broad,
        outcome: 'recovered',
        single: true,
        synthetic_event_id: actedId,
        detail: `participant ${p.participant_id} is delivered; participant.acted "delivered" written`,
      });
    }
    if (lastAct !== null && lastActAt !== null && created !== null && lastActAt > created) {
      const at = new Date(lastActAt).toISOString();
      explain(
        {
          event_type: 'participant.acted',
          participant_id: p.participant_id,
          // Up to the latest act's own instant: an earlier act can share its millisecond.
          window_from: new Date(created),
          window_to: new Date(lastActAt),
          anchor: new Date(lastActAt),
          exact: false,
          outcome: 'state_synced',
          single: false,
          synthetic_event_id: actedId,
          detail: `an act of participant ${p.participant_id} before its latest ("${lastAct}" at ${at}) or in the same millisecond, which the read model has or was just given: the file shows only the latest act, so an earlier one cannot be reproduced`,
        },
        standing,
      );
    }
    // A claim code keeps its participant held until it is redeemed (delivered) or lapses (undeliverable):
    // only a participant that was held can have changed through a claim. (Files with a send summary are
    // counted below: the read model never saw their participants held.)
    // A claim whose effect the read model already has (the delivery's participant.acted arrived, or an
    // earlier re-read synced the state): what the file shows now accounts for it, as for a superseded act.
    // Delivered later than the file's creation, with that delivery its latest act, is what a redeemed claim
    // looks like on a direct send (a queued send's participants start pending, never held). A later act
    // (read, signed) hides when the participant was delivered: at creation, never held, as far as the file
    // shows, so it explains no claim and the claim's gap stays open for on-call. Undeliverable is what a
    // lapsed claim looks like.
    if (m?.state === p.state && created !== null && !service.send_summary) {
      if (p.state === 'delivered' && lastAct === 'delivered' && lastActAt !== null && lastActAt > created) {
        explain(
          {
            event_type: 'claim.claimed',
            participant_id: p.participant_id,
            ...broad,
            outcome: 'state_synced',
            single: true,
            synthetic_event_id: null,
            detail: `participant ${p.participant_id} was delivered after the file was created, and the read model has it: a redeemed claim's effect; the claim event itself cannot be reproduced`,
          },
          standing,
        );
      }
      if (p.state === 'undeliverable') {
        explain(
          {
            event_type: 'claim.expired',
            participant_id: p.participant_id,
            ...broad,
            outcome: 'state_synced',
            single: true,
            synthetic_event_id: null,
            detail: `participant ${p.participant_id} is undeliverable, and the read model has it: a lapsed claim's effect; the claim event itself cannot be reproduced`,
          },
          standing,
        );
      }
    }
    // A participant the read model never saw (its file's created event was missed too) may have been held as
    // well: its state now comes from the snapshot, so a claim event of it is state-synced all the same.
    const mayHaveBeenHeld = m === undefined || m.state === 'held';
    if (!service.send_summary && becameDelivered && mayHaveBeenHeld) claimExplanation('claim.claimed', p.participant_id, actedId);
    if (!service.send_summary && p.state === 'undeliverable' && mayHaveBeenHeld)
      claimExplanation('claim.expired', p.participant_id, snapshotId);
  }
  // A queued send's summary freezes the counts when it drained; participants delivered or undeliverable beyond
  // those counts changed afterwards, which for held participants is a claim redeemed or lapsed.
  if (service.send_summary) {
    const newly = (state: string): number =>
      participants.filter((p) => p.state === state && mine.get(p.participant_id)?.state !== state).length;
    const since = (state: 'delivered' | 'undeliverable'): number =>
      participants.filter((p) => p.state === state).length - service.send_summary![state];
    for (let i = 0; i < Math.min(newly('delivered'), since('delivered')); i++) claimExplanation('claim.claimed', null, snapshotId, i);
    for (let i = 0; i < Math.min(newly('undeliverable'), since('undeliverable')); i++)
      claimExplanation('claim.expired', null, snapshotId, i);
  }

  if (statusRank(service.status) === 2 && (projected === undefined || projected.status === null || statusRank(projected.status) < 2)) {
    const type = service.status === 'sealed' ? 'correspondence.sealed' : 'correspondence.withdrawn';
    const eventId = emit(type, lastChange, {}, 'status', service.status);
    explain({
      event_type: type,
      participant_id: null,
      ...broad,
      outcome: 'recovered',
      single: true,
      synthetic_event_id: eventId,
      detail: `the file is ${service.status}; ${type} written`,
    });
  }

  const s = service.send_summary;
  const mineS = projected?.send_summary;
  if (
    s &&
    (!mineS ||
      mineS.delivered !== s.delivered ||
      mineS.held !== s.held ||
      mineS.undeliverable !== s.undeliverable ||
      mineS.total !== s.total)
  ) {
    const summary = { delivered: s.delivered, held: s.held, undeliverable: s.undeliverable, total: s.total };
    const eventId = emit(
      'correspondence.send_completed',
      lastChange,
      summary,
      'summary',
      String(s.delivered),
      String(s.held),
      String(s.undeliverable),
      String(s.total),
    );
    explain({
      event_type: 'correspondence.send_completed',
      participant_id: null,
      ...broad,
      outcome: 'recovered',
      single: true,
      synthetic_event_id: eventId,
      detail: `the send completed (${s.delivered} delivered, ${s.held} held, ${s.undeliverable} undeliverable of ${s.total}); correspondence.send_completed written`,
    });
  }

  for (const doc of documents) {
    if (projectedDocs.has(doc)) continue;
    if (sawCreated) {
      const eventId = emit('document.attached', lastChange, { document_id: doc }, 'document', doc);
      explain({
        event_type: 'document.attached',
        participant_id: null,
        ...broad,
        outcome: 'recovered',
        single: true,
        synthetic_event_id: eventId,
        detail: `document ${doc} is on the file; document.attached written`,
      });
    } else {
      // Without the created event postroom cannot tell a document given at creation from one attached later.
      explain({
        event_type: 'document.attached',
        participant_id: null,
        ...broad,
        outcome: 'state_synced',
        single: true,
        synthetic_event_id: snapshotId,
        detail: `document ${doc} is on the file; the snapshot carries it (given at creation or attached later: the file does not say)`,
      });
    }
  }
  return { events, explanations, standing };
}

export function toInboxRow(e: SyntheticEnvelope): NewInboxEvent {
  return inboxRowFromEnvelope(e, 'reconciler');
}
