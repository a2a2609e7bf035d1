import type { AnyKnownEvent } from '../events/catalogue.js';
import { PROJECTED_TYPES, stateRank, statusRank } from './rules.js';

const NONE: ReadonlySet<string> = new Set();

/**
 * One row per projected event, column-wise (the shape unnest() takes). Each
 * event contributes the facts it carries; the SQL reduces them per
 * correspondence and merges them with what is stored.
 */
export interface CorrespondenceFacts {
  correspondenceId: string[];
  eventId: string[];
  type: string[];
  at: string[];
  status: Array<string | null>;
  statusRank: Array<number | null>;
  kind: Array<string | null>;
  subject: Array<string | null>;
  contentType: Array<string | null>;
  /** The resource's created_at when the created event carries one, else the event's at; null for other types. */
  createdAt: Array<string | null>;
  documentId: Array<string | null>;
  delivered: Array<number | null>;
  held: Array<number | null>;
  undeliverable: Array<number | null>;
  total: Array<number | null>;
}

/** One row per (event, participant) the event speaks about. */
export interface ParticipantFacts {
  correspondenceId: string[];
  participantId: string[];
  ref: Array<string | null>;
  state: string[];
  stateRank: number[];
  act: Array<string | null>;
  at: string[];
  eventId: string[];
  /** The act came from a re-read of the file (an event the reconciler wrote), not a delivery. */
  reread: boolean[];
}

/** Documents a correspondence.created lists (given at creation): one row per document. */
export interface DocumentFacts {
  correspondenceId: string[];
  documentId: string[];
}

export interface ProjectionFacts {
  correspondence: CorrespondenceFacts;
  documents: DocumentFacts;
  participants: ParticipantFacts;
}

/**
 * `fromReread` holds the ids of events the reconciler wrote from a re-read (inbox
 * source `reconciler`): their act wins a tie of instants (migrations/011).
 */
export function collectFacts(events: readonly AnyKnownEvent[], fromReread: ReadonlySet<string> = NONE): ProjectionFacts {
  const c: CorrespondenceFacts = {
    correspondenceId: [],
    eventId: [],
    type: [],
    at: [],
    status: [],
    statusRank: [],
    kind: [],
    subject: [],
    contentType: [],
    createdAt: [],
    documentId: [],
    delivered: [],
    held: [],
    undeliverable: [],
    total: [],
  };
  const d: DocumentFacts = { correspondenceId: [], documentId: [] };
  const p: ParticipantFacts = {
    correspondenceId: [],
    participantId: [],
    ref: [],
    state: [],
    stateRank: [],
    act: [],
    at: [],
    eventId: [],
    reread: [],
  };

  const addParticipant = (cid: string, pid: string, ref: string | null, state: string, act: string | null, e: AnyKnownEvent): void => {
    p.correspondenceId.push(cid);
    p.participantId.push(pid);
    p.ref.push(ref);
    p.state.push(state);
    p.stateRank.push(stateRank(state));
    p.act.push(act);
    p.at.push(e.at);
    p.eventId.push(e.event_id);
    p.reread.push(fromReread.has(e.event_id));
  };

  for (const e of events) {
    if (e.type === 'claim.expired' || e.type === 'claim.claimed') {
      // A claim code that lapsed unredeemed: its recipient was never reached, so the participant is
      // undeliverable (docs/events.md). A redeemed one says nothing of state by itself (the delivery
      // fires participant.acted), so it ranks lowest and only teaches the participant's ref.
      // Only the participant changes; the file's facts do not.
      const { correspondence_id: claimCid, participant_id: claimPid, ref } = e.data;
      if (claimCid && claimPid)
        addParticipant(claimCid, claimPid, ref ?? null, e.type === 'claim.expired' ? 'undeliverable' : 'pending', null, e);
      continue;
    }
    if (!PROJECTED_TYPES.has(e.type)) continue;
    const cid = (e.data as { correspondence_id: string }).correspondence_id;
    let status: string | null = null;
    let kind: string | null = null;
    let subject: string | null = null;
    let contentType: string | null = null;
    let createdAt: string | null = null;
    let documentId: string | null = null;
    let summary: [number, number, number, number] | null = null;

    switch (e.type) {
      case 'correspondence.created':
        // A created event without a status still says the file exists.
        status = e.data.status ?? 'created';
        kind = e.data.kind ?? null;
        subject = e.data.subject ?? null;
        contentType = e.data.content_type ?? null;
        createdAt = validInstant(e.data.created_at) ?? e.at;
        for (const doc of new Set(e.data.document_ids ?? [])) {
          d.correspondenceId.push(cid);
          d.documentId.push(doc);
        }
        for (const part of e.data.participants ?? []) addParticipant(cid, part.participant_id, part.ref, part.state, null, e);
        break;
      case 'correspondence.sealed':
        status = 'sealed';
        break;
      case 'correspondence.withdrawn':
        status = 'withdrawn';
        break;
      case 'correspondence.send_completed':
        summary = [e.data.delivered, e.data.held, e.data.undeliverable, e.data.total];
        break;
      case 'document.attached':
        documentId = e.data.document_id;
        break;
      case 'participant.acted':
        // One cannot read, sign or approve what was not delivered: every act implies delivery.
        addParticipant(cid, e.data.participant_id, e.data.ref, 'delivered', e.data.act, e);
        break;
      default:
        break;
    }
    c.correspondenceId.push(cid);
    c.eventId.push(e.event_id);
    c.type.push(e.type);
    c.at.push(e.at);
    c.status.push(status);
    c.statusRank.push(status === null ? null : statusRank(status));
    c.kind.push(kind);
    c.subject.push(subject);
    c.contentType.push(contentType);
    c.createdAt.push(createdAt);
    c.documentId.push(documentId);
    c.delivered.push(summary?.[0] ?? null);
    c.held.push(summary?.[1] ?? null);
    c.undeliverable.push(summary?.[2] ?? null);
    c.total.push(summary?.[3] ?? null);
  }
  return { correspondence: c, documents: d, participants: p };
}

/** An ISO 8601 instant Postgres can hold, normalised; anything else is ignored rather than failing the batch. */
function validInstant(value: string | undefined): string | null {
  if (value === undefined) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(value)) return null;
  return new Date(t).toISOString();
}
