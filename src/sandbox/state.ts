import type { CorrespondenceStatus, EventType, ParticipantState, Plane } from './catalogue.js';
import type { Addressing } from './addressing.js';

/** An event as generated: the envelope fields, its serialised body, and what it concerns. */
export interface SandboxEvent {
  event_id: string;
  type: EventType;
  at: string;
  data: Record<string, unknown>;
  /** Not part of the envelope: lets tests and the reconciler tie an event to its file. */
  correspondenceId: string | undefined;
  /** Not part of the envelope: only endpoints of this plane receive the event. */
  plane: Plane;
  /** The exact bytes every attempt sends (and signs). */
  body: Buffer;
}

export interface Document {
  documentId: string;
  filename: string;
  mediaType: string;
  sizeBytes: number;
  sha256: string;
  createdAt: number;
  plane: Plane;
}

export interface Participant {
  participantId: string;
  correspondenceId: string;
  ref: string;
  displayName: string | undefined;
  addressing: Addressing;
  state: ParticipantState;
  /** Where a queued participant ends up when the send drains. */
  outcome: 'delivered' | 'held' | 'undeliverable';
  lastAct: string | null;
  lastActAt: string | null;
  claimId: string | undefined;
}

export interface SendSummary {
  delivered: number;
  held: number;
  undeliverable: number;
  total: number;
}

export interface Correspondence {
  correspondenceId: string;
  kind: string;
  subject: string;
  contentType: string;
  documentIds: string[];
  status: CorrespondenceStatus;
  createdAt: number;
  /** The instant of the last state change (epoch ms), the same as that change's events' `at`. */
  updatedAt: number;
  /** The file's place in its plane's change order (change-log.ts); 0 until first recorded. */
  changeSeq: number;
  participants: Participant[];
  sendSummary: SendSummary | null;
  plane: Plane;
  /** True while a 202 send has not drained. */
  queued: boolean;
  covenantId: string | undefined;
  planId: string | undefined;
}

export interface Claim {
  claimId: string;
  correspondenceId: string;
  participantId: string;
  status: 'open' | 'claimed' | 'expired';
}

export interface Endpoint {
  endpointId: string;
  url: string;
  events: string[];
  active: boolean;
  createdAt: number;
  secret: string;
  plane: Plane;
}

export interface Campaign {
  campaignId: string;
  status: string;
}

/** Everything the sandbox knows, in memory. Operations live in the services that use it. */
export interface SandboxState {
  documents: Map<string, Document>;
  correspondences: Map<string, Correspondence>;
  participants: Map<string, Participant>;
  claims: Map<string, Claim>;
  endpoints: Map<string, Endpoint>;
  campaigns: Map<string, Campaign>;
}

export function createState(): SandboxState {
  return {
    documents: new Map(),
    correspondences: new Map(),
    participants: new Map(),
    claims: new Map(),
    endpoints: new Map(),
    campaigns: new Map(),
  };
}

/** `GET /correspondence/{id}` exactly as docs/events.md fixes it. */
export interface CorrespondenceView {
  correspondence_id: string;
  kind: string;
  subject: string;
  content_type: string;
  document_ids: string[];
  status: 'live' | 'sealed' | 'withdrawn';
  created_at: string;
  updated_at: string;
  participants: Array<{
    participant_id: string;
    ref: string;
    state: 'pending' | 'held' | 'delivered' | 'undeliverable';
    last_act: string | null;
    last_act_at: string | null;
  }>;
  send_summary: { delivered: number; held: number; undeliverable: number; total: number } | null;
}

export function correspondenceView(c: Correspondence): CorrespondenceView {
  return {
    correspondence_id: c.correspondenceId,
    kind: c.kind,
    subject: c.subject,
    content_type: c.contentType,
    document_ids: [...c.documentIds],
    status: c.status,
    created_at: new Date(c.createdAt).toISOString(),
    updated_at: new Date(c.updatedAt).toISOString(),
    participants: c.participants.map((p) => ({
      participant_id: p.participantId,
      ref: p.ref,
      state: p.state,
      last_act: p.lastAct,
      last_act_at: p.lastActAt,
    })),
    send_summary: c.sendSummary ? { ...c.sendSummary } : null,
  };
}

export interface EndpointView {
  endpoint_id: string;
  url: string;
  events: string[];
  active: boolean;
  created_at: string;
}

export function endpointView(e: Endpoint): EndpointView {
  return {
    endpoint_id: e.endpointId,
    url: e.url,
    events: [...e.events],
    active: e.active,
    created_at: new Date(e.createdAt).toISOString(),
  };
}
