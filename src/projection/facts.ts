import type { AnyKnownEvent, PostroomEvent } from '../events/catalogue.js';
import type { EventTrait } from '../events/type-table.js';
import type { EventTypeName } from '../events/type-names.js';
import { stateRank, statusRank } from './rules.js';

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

/** What a file-projecting event says of its correspondence; a field left out says nothing. */
interface FileFact {
  correspondenceId: string;
  status?: string;
  kind?: string | null;
  subject?: string | null;
  contentType?: string | null;
  createdAt?: string;
  documentId?: string;
  summary?: readonly [delivered: number, held: number, undeliverable: number, total: number];
}

/** Where a reducer adds the facts of the participants and documents an event names. */
interface FactSink {
  participant(e: AnyKnownEvent, cid: string, pid: string, ref: string | null, state: string, act: string | null): void;
  document(cid: string, documentId: string): void;
}

/**
 * One event's facts: a `file` type returns what it says of its correspondence
 * (one row each, even when it says nothing but that it happened: the file's last
 * event), a `participant` type only adds participant facts.
 */
type Reducer<T extends EventTypeName> = (
  e: PostroomEvent<T>,
  sink: FactSink,
) => EventTrait<T, 'projection'> extends 'file' ? FileFact : void;

/** The projection's reading of each type; null where the table says it projects nothing. */
const REDUCERS: { [T in EventTypeName]: EventTrait<T, 'projection'> extends 'none' ? null : Reducer<T> } = {
  'correspondence.created': (e, sink) => {
    const cid = e.data.correspondence_id;
    for (const doc of new Set(e.data.document_ids ?? [])) sink.document(cid, doc);
    for (const part of e.data.participants ?? []) sink.participant(e, cid, part.participant_id, part.ref, part.state, null);
    return {
      correspondenceId: cid,
      // A created event without a status still says the file exists.
      status: e.data.status ?? 'created',
      kind: e.data.kind ?? null,
      subject: e.data.subject ?? null,
      contentType: e.data.content_type ?? null,
      createdAt: validInstant(e.data.created_at) ?? e.at,
    };
  },
  'correspondence.send_completed': (e) => ({
    correspondenceId: e.data.correspondence_id,
    summary: [e.data.delivered, e.data.held, e.data.undeliverable, e.data.total],
  }),
  'participant.acted': (e, sink) => {
    // One cannot read, sign or approve what was not delivered: every act implies delivery.
    sink.participant(e, e.data.correspondence_id, e.data.participant_id, e.data.ref, 'delivered', e.data.act);
    return { correspondenceId: e.data.correspondence_id };
  },
  'document.attached': (e) => ({ correspondenceId: e.data.correspondence_id, documentId: e.data.document_id }),
  'form.response_received': (e) => ({ correspondenceId: e.data.correspondence_id }),
  'correspondence.sealed': (e) => ({ correspondenceId: e.data.correspondence_id, status: 'sealed' }),
  'correspondence.withdrawn': (e) => ({ correspondenceId: e.data.correspondence_id, status: 'withdrawn' }),
  // A claim code that lapsed unredeemed: its recipient was never reached, so the participant is
  // undeliverable (docs/events.md). A redeemed one says nothing of state by itself (the delivery
  // fires participant.acted), so it ranks lowest and only teaches the participant's ref.
  'claim.claimed': (e, sink) => claimFacts(e, sink, 'pending'),
  'claim.expired': (e, sink) => claimFacts(e, sink, 'undeliverable'),
  'wallet.debited': null,
  'campaign.status_changed': null,
  'webhook.test': null,
};

/** A claim names its participant only sometimes; without both ids it teaches nothing. */
function claimFacts(e: PostroomEvent<'claim.claimed' | 'claim.expired'>, sink: FactSink, state: string): void {
  const { correspondence_id: cid, participant_id: pid, ref } = e.data;
  if (cid && pid) sink.participant(e, cid, pid, ref ?? null, state, null);
}

/**
 * `fromReread` holds the ids of events the reconciler wrote from a re-read (inbox
 * source `reconciler`): their act wins a tie of instants (migrations/011).
 */
export function collectFacts(events: readonly AnyKnownEvent[], fromReread: ReadonlySet<string> = NONE): ProjectionFacts {
  const c = emptyCorrespondenceFacts();
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
  const sink: FactSink = {
    participant(e, cid, pid, ref, state, act) {
      p.correspondenceId.push(cid);
      p.participantId.push(pid);
      p.ref.push(ref);
      p.state.push(state);
      p.stateRank.push(stateRank(state));
      p.act.push(act);
      p.at.push(e.at);
      p.eventId.push(e.event_id);
      p.reread.push(fromReread.has(e.event_id));
    },
    document(cid, documentId) {
      d.correspondenceId.push(cid);
      d.documentId.push(documentId);
    },
  };
  for (const e of events) {
    const reduce = REDUCERS[e.type] as ((e: AnyKnownEvent, sink: FactSink) => FileFact | void) | null;
    const fact = reduce?.(e, sink);
    if (fact) pushFileFact(c, e, fact);
  }
  return { correspondence: c, documents: d, participants: p };
}

function emptyCorrespondenceFacts(): CorrespondenceFacts {
  return {
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
}

function pushFileFact(c: CorrespondenceFacts, e: AnyKnownEvent, f: FileFact): void {
  const status = f.status ?? null;
  c.correspondenceId.push(f.correspondenceId);
  c.eventId.push(e.event_id);
  c.type.push(e.type);
  c.at.push(e.at);
  c.status.push(status);
  c.statusRank.push(status === null ? null : statusRank(status));
  c.kind.push(f.kind ?? null);
  c.subject.push(f.subject ?? null);
  c.contentType.push(f.contentType ?? null);
  c.createdAt.push(f.createdAt ?? null);
  c.documentId.push(f.documentId ?? null);
  c.delivered.push(f.summary?.[0] ?? null);
  c.held.push(f.summary?.[1] ?? null);
  c.undeliverable.push(f.summary?.[2] ?? null);
  c.total.push(f.summary?.[3] ?? null);
}

/** An ISO 8601 instant Postgres can hold, normalised; anything else is ignored rather than failing the batch. */
function validInstant(value: string | undefined): string | null {
  if (value === undefined) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(value)) return null;
  return new Date(t).toISOString();
}
