import type { EventTypeName } from '../events/type-names.js';
import { stateRank, statusRank } from '../projection/rules.js';
import { ms, type FileReading, type ParticipantReading, type PlanOutput } from './synthetic-plan.js';

/**
 * What a re-read of one file writes for one event type: synthetic events that
 * bring the projection to the service, each with the explanation it gives for a
 * missed event of that type. `type` is the type being written (synthetic.ts
 * holds which writer stands for which type).
 */
export type Writer<T extends EventTypeName = EventTypeName> = (r: FileReading, out: PlanOutput, type: T) => void;

/**
 * A projection that never applied the created event, or lacks fields only the file
 * itself shows (kind, subject, content_type, documents, participants and their
 * refs, states with no event of their own such as held), gets a snapshot of the
 * file as a created event; the projection merges it under its never-backwards rules.
 */
export const writeSnapshot: Writer = (r, out, type) => {
  const { service, projected, created } = r;
  const fileDiffers =
    !r.sawCreated ||
    (projected?.kind ?? null) !== (service.kind ?? null) ||
    (projected?.subject ?? null) !== (service.subject ?? null) ||
    (projected?.content_type ?? null) !== (service.content_type ?? null) ||
    (created !== null && ms(projected?.created_at) !== created);
  const participantsDiffer = r.participants.some(({ service: p, mine: m }) => {
    if (!m) return true;
    if (m.ref === null && p.ref) return true;
    // Delivered comes as participant.acted; other states (held, undeliverable) have no event of their own.
    return p.state !== 'delivered' && stateRank(m.state) < stateRank(p.state);
  });

  if (fileDiffers || participantsDiffer) {
    const snapshotParticipants = r.participants.map(({ service: p }) => ({ participant_id: p.participant_id, ref: p.ref, state: p.state }));
    const status = statusRank(service.status) >= 1 ? 'live' : service.status;
    r.snapshotId = out.emit(
      type,
      service.created_at ?? r.observedAt.toISOString(),
      {
        kind: service.kind,
        subject: service.subject,
        ...(service.content_type === undefined ? {} : { content_type: service.content_type }),
        ...(service.created_at === undefined ? {} : { created_at: service.created_at }),
        document_ids: r.documents,
        status,
        participants: snapshotParticipants,
      },
      'snapshot',
      status,
      service.kind ?? '',
      service.subject ?? '',
      service.content_type ?? '',
      service.created_at ?? '',
      r.documents.join(','),
      ...snapshotParticipants.map((p) => `${p.participant_id}=${p.state}/${p.ref ?? ''}`),
    );
  }
  if (!r.sawCreated) {
    out.explain({
      event_type: type,
      participant_id: null,
      window_from: created === null ? r.earliest : new Date(created),
      window_to: created === null ? r.latest : new Date(created + r.toleranceMs),
      anchor: new Date(created ?? r.updated),
      exact: created !== null,
      outcome: 'recovered',
      single: true,
      synthetic_event_id: r.snapshotId,
      detail: `the file was created at ${service.created_at ?? '(time not shown)'}; a ${type} snapshot was written`,
    });
  }
};

/**
 * A participant's latest act the projection has not seen is written with that act
 * at its time. Earlier acts in between cannot be reproduced (the file shows only
 * the last one): they are state_synced.
 */
export const writeActs: Writer = (r, out, type) => {
  for (const pr of r.participants) {
    const actedId = writeLatestAct(r, out, type, pr);
    pr.actedId = actedId;
    const { lastAct, lastActAt } = pr;
    if (lastAct !== null && lastActAt !== null && r.created !== null && lastActAt > r.created) {
      const pid = pr.service.participant_id;
      const at = new Date(lastActAt).toISOString();
      out.explainStanding({
        event_type: type,
        participant_id: pid,
        // Up to the latest act's own instant: an earlier act can share its millisecond.
        window_from: new Date(r.created),
        window_to: new Date(lastActAt),
        anchor: new Date(lastActAt),
        exact: false,
        outcome: 'state_synced',
        single: false,
        synthetic_event_id: actedId,
        detail: `an act of participant ${pid} before its latest ("${lastAct}" at ${at}) or in the same millisecond, which the read model has or was just given: the file shows only the latest act, so an earlier one cannot be reproduced`,
      });
    }
  }
};

/** The act the read model lacks, or `delivered` for a participant that became delivered with no act shown; its event id. */
function writeLatestAct(r: FileReading, out: PlanOutput, type: string, pr: ParticipantReading): string | null {
  const { service: p, mine: m, lastAct, lastActAt } = pr;
  const mineAt = ms(m?.last_act_at);
  // Two acts can share a millisecond, and ids do not order them: at the read model's own instant a different
  // act is the one the service shows last, so it is written too (it wins the tie, migrations/011).
  const actMissing = mineAt === null || (lastActAt !== null && (lastActAt > mineAt || (lastActAt === mineAt && m?.last_act !== lastAct)));
  if (lastAct !== null && lastActAt !== null && actMissing) {
    const at = new Date(lastActAt).toISOString();
    // The event carries the service's own instant: one finer than a millisecond must still follow the act
    // the read model has in that millisecond. The id takes the millisecond.
    const actedId = out.emit(
      type,
      p.last_act_at ?? at,
      { participant_id: p.participant_id, act: lastAct, ref: p.ref },
      p.participant_id,
      lastAct,
      at,
    );
    out.explain({
      event_type: type,
      participant_id: p.participant_id,
      window_from: new Date(lastActAt),
      window_to: new Date(lastActAt + r.toleranceMs),
      anchor: new Date(lastActAt),
      exact: true,
      outcome: 'recovered',
      single: true,
      synthetic_event_id: actedId,
      detail: `participant ${p.participant_id} acted "${lastAct}" at ${at}; ${type} written`,
    });
    return actedId;
  }
  if (!pr.becameDelivered) return null;
  const actedId = out.emit(
    type,
    r.lastChange,
    { participant_id: p.participant_id, act: 'delivered', ref: p.ref },
    p.participant_id,
    'delivered',
  );
  out.explain({
    event_type: type,
    participant_id: p.participant_id,
    ...r.broad,
    outcome: 'recovered',
    single: true,
    synthetic_event_id: actedId,
    detail: `participant ${p.participant_id} is delivered; ${type} "delivered" written`,
  });
  return actedId;
}

/**
 * A claim code that was redeemed has no event to reproduce (no claim id on the
 * file): its effect, a held participant become delivered, is state_synced.
 *
 * A claim whose effect the read model already has (the delivery's act arrived, or an
 * earlier re-read synced the state) is accounted for by what the file shows now, as
 * a superseded act is. Delivered later than the file's creation, with that delivery
 * its latest act, is what a redeemed claim looks like on a direct send (a queued
 * send's participants start pending, never held). A later act (read, signed) hides
 * when the participant was delivered: at creation, never held, as far as the file
 * shows, so it explains no claim and the claim's gap stays open for on-call.
 */
export const writeClaimsRedeemed: Writer = (r, out, type) => {
  const became = 'delivered (a redeemed claim code delivers)';
  for (const pr of r.participants) {
    const { service: p, lastAct, lastActAt } = pr;
    if (
      showsClaimAlreadyApplied(r, pr) &&
      p.state === 'delivered' &&
      lastAct === 'delivered' &&
      lastActAt !== null &&
      lastActAt > r.created!
    ) {
      out.explainStanding({
        event_type: type,
        participant_id: p.participant_id,
        ...r.broad,
        outcome: 'state_synced',
        single: true,
        synthetic_event_id: null,
        detail: `participant ${p.participant_id} was delivered after the file was created, and the read model has it: a redeemed claim's effect; the claim event itself cannot be reproduced`,
      });
    }
    if (!r.service.send_summary && pr.becameDelivered && pr.mayHaveBeenHeld)
      explainClaim(r, out, type, became, p.participant_id, pr.actedId);
  }
  explainClaimsBeyondSummary(r, out, type, 'delivered', became);
};

/** A claim code that lapsed: as a redeemed one, but its participant becomes undeliverable. */
export const writeClaimsLapsed: Writer = (r, out, type) => {
  const became = 'undeliverable (a lapsed claim code makes it so)';
  for (const pr of r.participants) {
    const p = pr.service;
    if (showsClaimAlreadyApplied(r, pr) && p.state === 'undeliverable') {
      out.explainStanding({
        event_type: type,
        participant_id: p.participant_id,
        ...r.broad,
        outcome: 'state_synced',
        single: true,
        synthetic_event_id: null,
        detail: `participant ${p.participant_id} is undeliverable, and the read model has it: a lapsed claim's effect; the claim event itself cannot be reproduced`,
      });
    }
    if (!r.service.send_summary && p.state === 'undeliverable' && pr.mayHaveBeenHeld)
      explainClaim(r, out, type, became, p.participant_id, r.snapshotId);
  }
  explainClaimsBeyondSummary(r, out, type, 'undeliverable', became);
};

/**
 * The read model already has the participant's state, on a file with a known creation
 * time and no send summary (files with one are counted in explainClaimsBeyondSummary:
 * the read model never saw their participants held).
 */
function showsClaimAlreadyApplied(r: FileReading, pr: ParticipantReading): boolean {
  return pr.mine?.state === pr.service.state && r.created !== null && !r.service.send_summary;
}

/**
 * A queued send's summary freezes the counts when it drained; participants delivered
 * or undeliverable beyond those counts changed afterwards, which for held
 * participants is a claim redeemed or lapsed.
 */
function explainClaimsBeyondSummary(
  r: FileReading,
  out: PlanOutput,
  type: string,
  state: 'delivered' | 'undeliverable',
  became: string,
): void {
  const summary = r.service.send_summary;
  if (!summary) return;
  const newly = r.participants.filter((p) => p.service.state === state && p.mine?.state !== state).length;
  const since = r.participants.filter((p) => p.service.state === state).length - summary[state];
  for (let i = 0; i < Math.min(newly, since); i++) explainClaim(r, out, type, became, null, r.snapshotId, i);
}

function explainClaim(
  r: FileReading,
  out: PlanOutput,
  type: string,
  became: string,
  participantId: string | null,
  syntheticId: string | null,
  nth = 0,
): void {
  const who = participantId ? `participant ${participantId}` : `a participant (${nth + 1} beyond the send's counts)`;
  out.explain({
    event_type: type,
    participant_id: participantId,
    ...r.broad,
    outcome: 'state_synced',
    single: true,
    synthetic_event_id: syntheticId,
    detail: `${who} went from held to ${became}; the claim event itself cannot be reproduced`,
  });
}

/** A file sealed or withdrawn that the read model does not show so: the status's own event type. */
export function writeStatus(status: 'sealed' | 'withdrawn'): Writer {
  return (r, out, type) => {
    const { service, projected } = r;
    if (service.status !== status) return;
    if (projected !== undefined && projected.status !== null && statusRank(projected.status) >= 2) return;
    const eventId = out.emit(type, r.lastChange, {}, 'status', service.status);
    out.explain({
      event_type: type,
      participant_id: null,
      ...r.broad,
      outcome: 'recovered',
      single: true,
      synthetic_event_id: eventId,
      detail: `the file is ${service.status}; ${type} written`,
    });
  };
}

/** A send summary the read model lacks or holds different counts of. */
export const writeSendSummary: Writer = (r, out, type) => {
  const s = r.service.send_summary;
  const mine = r.projected?.send_summary;
  if (!s) return;
  if (mine && mine.delivered === s.delivered && mine.held === s.held && mine.undeliverable === s.undeliverable && mine.total === s.total)
    return;
  const summary = { delivered: s.delivered, held: s.held, undeliverable: s.undeliverable, total: s.total };
  const eventId = out.emit(
    type,
    r.lastChange,
    summary,
    'summary',
    String(s.delivered),
    String(s.held),
    String(s.undeliverable),
    String(s.total),
  );
  out.explain({
    event_type: type,
    participant_id: null,
    ...r.broad,
    outcome: 'recovered',
    single: true,
    synthetic_event_id: eventId,
    detail: `the send completed (${s.delivered} delivered, ${s.held} held, ${s.undeliverable} undeliverable of ${s.total}); ${type} written`,
  });
};

/** Documents on the file the read model lacks. */
export const writeDocuments: Writer = (r, out, type) => {
  const projectedDocs = new Set(r.projected?.document_ids ?? []);
  for (const doc of r.documents) {
    if (projectedDocs.has(doc)) continue;
    if (r.sawCreated) {
      const eventId = out.emit(type, r.lastChange, { document_id: doc }, 'document', doc);
      out.explain({
        event_type: type,
        participant_id: null,
        ...r.broad,
        outcome: 'recovered',
        single: true,
        synthetic_event_id: eventId,
        detail: `document ${doc} is on the file; ${type} written`,
      });
    } else {
      // Without the created event postroom cannot tell a document given at creation from one attached later.
      out.explain({
        event_type: type,
        participant_id: null,
        ...r.broad,
        outcome: 'state_synced',
        single: true,
        synthetic_event_id: r.snapshotId,
        detail: `document ${doc} is on the file; the snapshot carries it (given at creation or attached later: the file does not say)`,
      });
    }
  }
};
