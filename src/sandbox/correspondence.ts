import type { Clock } from '../clock.js';
import type { Activity, Timers } from './activity.js';
import { identityKey, outcomeFor, type Addressing, type RecipientInput } from './addressing.js';
import { documentOn } from './documents.js';
import type { ParticipantAct, Plane } from './catalogue.js';
import { apiErrors } from './errors.js';
import type { ChangeLog } from './change-log.js';
import type { EmitOptions, EventLog } from './events.js';
import type { IdFactory } from './ids.js';
import type { Claim, Correspondence, Participant, SandboxEvent, SandboxState, SendSummary } from './state.js';
import type { Wallet } from './wallet.js';

export interface CreateCorrespondenceInput {
  kind: string;
  subject: string;
  content_type: string;
  document_ids: string[];
  recipients: RecipientInput[];
}

export interface CreateOptions {
  plane: Plane;
  /** 202: every participant pending until the send drains. */
  queued: boolean;
  planId?: string;
}

export interface CorrespondenceService {
  create(input: CreateCorrespondenceInput, options: CreateOptions): Correspondence;
  get(correspondenceId: string): Correspondence;
  /** The file if it is on `plane`, else 404 as if it did not exist: a key sees only its plane's files. */
  getOn(correspondenceId: string, plane: Plane): Correspondence;
  /** Completes a queued send now instead of after the queue delay (no-op when already complete). */
  completeSend(correspondenceId: string): void;
  act(participantId: string, act: ParticipantAct): SandboxEvent[];
  /** A recipient verified: each of its held items delivers and fires participant.acted. */
  verify(target: { addressing: Addressing } | { participantId: string }): Participant[];
  seal(correspondenceId: string): SandboxEvent;
  withdraw(correspondenceId: string): SandboxEvent;
  attach(correspondenceId: string, documentId: string): SandboxEvent;
  claim(claimId: string): SandboxEvent[];
  expireClaim(claimId: string): SandboxEvent;
}

export interface CorrespondenceDeps {
  state: SandboxState;
  events: EventLog;
  clock: Clock;
  ids: IdFactory;
  timers: Timers;
  activity: Activity;
  wallet: Wallet;
  /** How long a queued (202) send takes to drain. */
  queueDelayMs: number;
  changes: ChangeLog;
}

/** What the service's operations on files share: the sandbox's state and the steps every change takes. */
interface Files {
  deps: CorrespondenceDeps;
  /** identity → participants addressed to it, for verification across files. */
  byIdentity: Map<string, Participant[]>;
  get(id: string): Correspondence;
  participant(id: string): Participant;
  requireLive(c: Correspondence, doing: string): void;
  on(c: Correspondence, at: number): EmitOptions;
  acted(p: Participant, act: string, at: number): SandboxEvent;
  deliver(p: Participant, at: number): SandboxEvent;
  /** Completes a queued send: participants reach their outcome, and the send's summary is announced. */
  drain(c: Correspondence): void;
}

export function createCorrespondenceService(deps: CorrespondenceDeps): CorrespondenceService {
  const f = files(deps);
  const { state, events } = deps;
  return {
    get: f.get,
    getOn(id, plane) {
      const c = state.correspondences.get(id);
      if (!c || c.plane !== plane) throw apiErrors.notFound('correspondence', id);
      return c;
    },
    completeSend: (id) => f.drain(f.get(id)),
    create: (input, options) => createFile(f, input, options),

    act(participantId, act) {
      const p = f.participant(participantId);
      const c = f.get(p.correspondenceId);
      f.requireLive(c, `act on participant ${participantId}`);
      if (p.state !== 'delivered')
        throw apiErrors.invalidState(`Participant ${participantId} is ${p.state}; only a delivered participant can act.`);
      const at = deps.clock.now();
      deps.changes.record(c, at);
      const out = [f.acted(p, act, at)];
      if (act === 'submitted') {
        out.push(
          events.emit(
            'form.response_received',
            { correspondence_id: c.correspondenceId, participant_id: p.participantId, response_id: deps.ids.next('rsp') },
            f.on(c, at),
          ),
        );
      }
      return out;
    },

    verify: (target) => verifyRecipient(f, target),

    seal(id) {
      const c = f.get(id);
      f.requireLive(c, 'seal');
      if (c.queued) throw apiErrors.invalidState(`Cannot seal: the queued send of ${id} has not completed.`);
      const at = deps.clock.now();
      c.status = 'sealed';
      c.covenantId = deps.ids.next('cov');
      deps.changes.record(c, at);
      return events.emit('correspondence.sealed', { correspondence_id: id, covenant_id: c.covenantId }, f.on(c, at));
    },

    withdraw(id) {
      const c = f.get(id);
      f.requireLive(c, 'withdraw');
      const at = deps.clock.now();
      c.status = 'withdrawn';
      deps.changes.record(c, at);
      return events.emit('correspondence.withdrawn', { correspondence_id: id }, f.on(c, at));
    },

    attach(id, documentId) {
      const c = f.get(id);
      f.requireLive(c, 'attach a document');
      if (!documentOn(state, documentId, c.plane)) throw apiErrors.notFound('document', documentId);
      // Refused rather than ignored: the caller learns nothing was added and no event fires.
      if (c.documentIds.includes(documentId))
        throw apiErrors.invalidState(`Document ${documentId} is already attached to correspondence ${id}.`);
      const at = deps.clock.now();
      c.documentIds.push(documentId);
      deps.changes.record(c, at);
      return events.emit('document.attached', { correspondence_id: id, document_id: documentId }, f.on(c, at));
    },

    claim: (claimId) => redeemClaim(f, claimId),
    expireClaim: (claimId) => lapseClaim(f, claimId),
  };
}

function files(deps: CorrespondenceDeps): Files {
  const { state, events } = deps;
  const byIdentity = new Map<string, Participant[]>();
  const get = (id: string): Correspondence => {
    const c = state.correspondences.get(id);
    if (!c) throw apiErrors.notFound('correspondence', id);
    return c;
  };
  const participant = (id: string): Participant => {
    const p = state.participants.get(id);
    if (!p) throw apiErrors.notFound('participant', id);
    return p;
  };
  const requireLive = (c: Correspondence, doing: string): void => {
    if (c.status !== 'live') throw apiErrors.invalidState(`Cannot ${doing}: correspondence ${c.correspondenceId} is ${c.status}.`);
  };

  /*
   * One clock read per state change: the instant `at` stamps the resource (created_at,
   * updated_at, last_act_at) and every event the change fires, so they never differ by
   * the millisecond between two reads. Each change also moves the file to the end of the
   * listing order (change-log.ts).
   */
  const on = (c: Correspondence, at: number): EmitOptions => ({ correspondenceId: c.correspondenceId, plane: c.plane, at });
  const acted = (p: Participant, act: string, at: number): SandboxEvent => {
    const c = get(p.correspondenceId);
    const event = events.emit(
      'participant.acted',
      { correspondence_id: p.correspondenceId, participant_id: p.participantId, act, ref: p.ref },
      on(c, at),
    );
    p.lastAct = act;
    p.lastActAt = event.at;
    return event;
  };
  const deliver = (p: Participant, at: number): SandboxEvent => {
    p.state = 'delivered';
    return acted(p, 'delivered', at);
  };

  const summarise = (c: Correspondence): SendSummary => {
    const s: SendSummary = { delivered: 0, held: 0, undeliverable: 0, total: c.participants.length };
    for (const p of c.participants) if (p.state !== 'pending') s[p.state]++;
    return s;
  };

  const drain = (c: Correspondence): void => {
    if (!c.queued) return;
    c.queued = false;
    // A file withdrawn while queued never sends: its participants stay pending (nothing visible changes).
    if (c.status === 'withdrawn') return;
    const at = deps.clock.now();
    for (const p of c.participants) p.state = p.outcome;
    for (const p of c.participants) if (p.state === 'delivered') acted(p, 'delivered', at);
    c.sendSummary = summarise(c);
    deps.changes.record(c, at);
    events.emit('correspondence.send_completed', { correspondence_id: c.correspondenceId, ...c.sendSummary }, on(c, at));
  };

  return { deps, byIdentity, get, participant, requireLive, on, acted, deliver, drain };
}

function createFile(f: Files, input: CreateCorrespondenceInput, options: CreateOptions): Correspondence {
  // A document of the other plane does not exist for this one.
  const missing = input.document_ids.find((d) => !documentOn(f.deps.state, d, options.plane));
  if (missing !== undefined)
    throw apiErrors.unprocessable('unknown_document', `document_ids: no uploaded document ${JSON.stringify(missing.slice(0, 100))}.`, {
      field: 'document_ids',
      document_id: missing,
    });
  const cost = options.plane === 'live' ? f.deps.wallet.pricePerRecipient * input.recipients.length : 0;
  if (cost > 0) f.deps.wallet.ensure(cost);

  const at = f.deps.clock.now();
  const correspondenceId = f.deps.ids.next('cor');
  const c: Correspondence = {
    correspondenceId,
    kind: input.kind,
    subject: input.subject,
    contentType: input.content_type,
    // A document named twice is on the file once.
    documentIds: [...new Set(input.document_ids)],
    status: 'live',
    createdAt: at,
    updatedAt: at,
    changeSeq: 0,
    participants: [],
    sendSummary: null,
    plane: options.plane,
    queued: options.queued,
    covenantId: undefined,
    planId: options.planId,
  };
  for (const r of input.recipients) {
    const outcome = outcomeFor(r.addressing);
    const p: Participant = {
      participantId: f.deps.ids.next('par'),
      correspondenceId,
      ref: r.ref,
      displayName: r.display_name,
      addressing: r.addressing,
      state: options.queued ? 'pending' : outcome,
      outcome,
      lastAct: null,
      lastActAt: null,
      claimId: undefined,
    };
    if (r.addressing.type === 'claim_code') {
      const claim: Claim = { claimId: f.deps.ids.next('clm'), correspondenceId, participantId: p.participantId, status: 'open' };
      p.claimId = claim.claimId;
      f.deps.state.claims.set(claim.claimId, claim);
    }
    c.participants.push(p);
    f.deps.state.participants.set(p.participantId, p);
    const key = identityKey(r.addressing);
    const list = f.byIdentity.get(key);
    if (list) list.push(p);
    else f.byIdentity.set(key, [p]);
  }
  // Counts are what correspondence.send_completed announces, and it fires only for queued sends (spec):
  // a direct send has no summary, so a receiver's projection can match the service from events alone.
  f.deps.state.correspondences.set(correspondenceId, c);
  f.deps.changes.record(c, at);

  f.deps.events.emit(
    'correspondence.created',
    {
      correspondence_id: correspondenceId,
      kind: c.kind,
      subject: c.subject,
      status: c.status,
      content_type: c.contentType,
      document_ids: [...c.documentIds],
      created_at: new Date(at).toISOString(),
      participants: c.participants.map((p) => ({ participant_id: p.participantId, ref: p.ref, state: p.state })),
    },
    f.on(c, at),
  );
  if (!options.queued) for (const p of c.participants) if (p.state === 'delivered') f.acted(p, 'delivered', at);
  if (cost > 0) f.deps.wallet.debit(cost, correspondenceId, at);
  if (options.queued) {
    f.deps.activity.begin();
    f.deps.timers.set(() => {
      try {
        f.drain(c);
      } finally {
        f.deps.activity.end();
      }
    }, f.deps.queueDelayMs);
  }
  return c;
}

function verifyRecipient(f: Files, target: { addressing: Addressing } | { participantId: string }): Participant[] {
  if ('participantId' in target) {
    const p = f.participant(target.participantId);
    if (p.state !== 'held') throw apiErrors.invalidState(`Participant ${p.participantId} is ${p.state}, not held.`);
    if (p.claimId !== undefined)
      throw apiErrors.invalidState(
        `Participant ${p.participantId} was addressed by claim code; it delivers when claim ${p.claimId} is claimed.`,
      );
    const c = f.get(p.correspondenceId);
    f.requireLive(c, `deliver participant ${p.participantId}`);
    const at = f.deps.clock.now();
    f.deps.changes.record(c, at);
    f.deliver(p, at);
    return [p];
  }
  // One verification, one instant, for every file it releases.
  const at = f.deps.clock.now();
  const released: Participant[] = [];
  for (const p of f.byIdentity.get(identityKey(target.addressing)) ?? []) {
    if (p.state !== 'held' || p.claimId !== undefined) continue;
    const c = f.deps.state.correspondences.get(p.correspondenceId);
    if (c?.status !== 'live') continue;
    f.deps.changes.record(c, at);
    f.deliver(p, at);
    released.push(p);
  }
  return released;
}

function redeemClaim(f: Files, claimId: string): SandboxEvent[] {
  const claim = f.deps.state.claims.get(claimId);
  if (!claim) throw apiErrors.notFound('claim', claimId);
  if (claim.status !== 'open') throw apiErrors.invalidState(`Claim ${claimId} is already ${claim.status}.`);
  const p = f.participant(claim.participantId);
  const c = f.get(claim.correspondenceId);
  f.requireLive(c, `claim ${claimId}`);
  if (p.state !== 'held')
    throw apiErrors.invalidState(`Participant ${p.participantId} is ${p.state}; a claim is redeemed once the send has completed.`);
  const at = f.deps.clock.now();
  claim.status = 'claimed';
  f.deps.changes.record(c, at);
  const claimed = f.deps.events.emit(
    'claim.claimed',
    { claim_id: claimId, correspondence_id: claim.correspondenceId, participant_id: p.participantId, ref: p.ref },
    f.on(c, at),
  );
  return [claimed, f.deliver(p, at)];
}

function lapseClaim(f: Files, claimId: string): SandboxEvent {
  const claim = f.deps.state.claims.get(claimId);
  if (!claim) throw apiErrors.notFound('claim', claimId);
  if (claim.status !== 'open') throw apiErrors.invalidState(`Claim ${claimId} is already ${claim.status}.`);
  const p = f.participant(claim.participantId);
  if (p.state !== 'held')
    throw apiErrors.invalidState(`Participant ${p.participantId} is ${p.state}; a claim lapses once the send has completed.`);
  // Lapse is time-driven, not a file operation: it happens on a sealed or withdrawn file too.
  const c = f.get(claim.correspondenceId);
  const at = f.deps.clock.now();
  claim.status = 'expired';
  p.state = 'undeliverable';
  f.deps.changes.record(c, at);
  return f.deps.events.emit(
    'claim.expired',
    { claim_id: claimId, correspondence_id: claim.correspondenceId, participant_id: p.participantId, ref: p.ref },
    f.on(c, at),
  );
}
