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

export function createCorrespondenceService(deps: CorrespondenceDeps): CorrespondenceService {
  const { state, events } = deps;
  /** identity → participants addressed to it, for verification across files. */
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

  return {
    get,
    getOn(id, plane) {
      const c = state.correspondences.get(id);
      if (!c || c.plane !== plane) throw apiErrors.notFound('correspondence', id);
      return c;
    },
    completeSend: (id) => drain(get(id)),
    create(input, options) {
      // A document of the other plane does not exist for this one.
      const missing = input.document_ids.find((d) => !documentOn(state, d, options.plane));
      if (missing !== undefined)
        throw apiErrors.unprocessable('unknown_document', `document_ids: no uploaded document ${JSON.stringify(missing.slice(0, 100))}.`, {
          field: 'document_ids',
          document_id: missing,
        });
      const cost = options.plane === 'live' ? deps.wallet.pricePerRecipient * input.recipients.length : 0;
      if (cost > 0) deps.wallet.ensure(cost);

      const at = deps.clock.now();
      const correspondenceId = deps.ids.next('cor');
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
          participantId: deps.ids.next('par'),
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
          const claim: Claim = { claimId: deps.ids.next('clm'), correspondenceId, participantId: p.participantId, status: 'open' };
          p.claimId = claim.claimId;
          state.claims.set(claim.claimId, claim);
        }
        c.participants.push(p);
        state.participants.set(p.participantId, p);
        const key = identityKey(r.addressing);
        const list = byIdentity.get(key);
        if (list) list.push(p);
        else byIdentity.set(key, [p]);
      }
      // Counts are what correspondence.send_completed announces, and it fires only for queued sends (spec):
      // a direct send has no summary, so a receiver's projection can match the service from events alone.
      state.correspondences.set(correspondenceId, c);
      deps.changes.record(c, at);

      events.emit(
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
        on(c, at),
      );
      if (!options.queued) for (const p of c.participants) if (p.state === 'delivered') acted(p, 'delivered', at);
      if (cost > 0) deps.wallet.debit(cost, correspondenceId, at);
      if (options.queued) {
        deps.activity.begin();
        deps.timers.set(() => {
          try {
            drain(c);
          } finally {
            deps.activity.end();
          }
        }, deps.queueDelayMs);
      }
      return c;
    },

    act(participantId, act) {
      const p = participant(participantId);
      const c = get(p.correspondenceId);
      requireLive(c, `act on participant ${participantId}`);
      if (p.state !== 'delivered')
        throw apiErrors.invalidState(`Participant ${participantId} is ${p.state}; only a delivered participant can act.`);
      const at = deps.clock.now();
      deps.changes.record(c, at);
      const out = [acted(p, act, at)];
      if (act === 'submitted') {
        out.push(
          events.emit(
            'form.response_received',
            { correspondence_id: c.correspondenceId, participant_id: p.participantId, response_id: deps.ids.next('rsp') },
            on(c, at),
          ),
        );
      }
      return out;
    },

    verify(target) {
      if ('participantId' in target) {
        const p = participant(target.participantId);
        if (p.state !== 'held') throw apiErrors.invalidState(`Participant ${p.participantId} is ${p.state}, not held.`);
        if (p.claimId !== undefined)
          throw apiErrors.invalidState(
            `Participant ${p.participantId} was addressed by claim code; it delivers when claim ${p.claimId} is claimed.`,
          );
        const c = get(p.correspondenceId);
        requireLive(c, `deliver participant ${p.participantId}`);
        const at = deps.clock.now();
        deps.changes.record(c, at);
        deliver(p, at);
        return [p];
      }
      // One verification, one instant, for every file it releases.
      const at = deps.clock.now();
      const released: Participant[] = [];
      for (const p of byIdentity.get(identityKey(target.addressing)) ?? []) {
        if (p.state !== 'held' || p.claimId !== undefined) continue;
        const c = state.correspondences.get(p.correspondenceId);
        if (c?.status !== 'live') continue;
        deps.changes.record(c, at);
        deliver(p, at);
        released.push(p);
      }
      return released;
    },

    seal(id) {
      const c = get(id);
      requireLive(c, 'seal');
      if (c.queued) throw apiErrors.invalidState(`Cannot seal: the queued send of ${id} has not completed.`);
      const at = deps.clock.now();
      c.status = 'sealed';
      c.covenantId = deps.ids.next('cov');
      deps.changes.record(c, at);
      return events.emit('correspondence.sealed', { correspondence_id: id, covenant_id: c.covenantId }, on(c, at));
    },

    withdraw(id) {
      const c = get(id);
      requireLive(c, 'withdraw');
      const at = deps.clock.now();
      c.status = 'withdrawn';
      deps.changes.record(c, at);
      return events.emit('correspondence.withdrawn', { correspondence_id: id }, on(c, at));
    },

    attach(id, documentId) {
      const c = get(id);
      requireLive(c, 'attach a document');
      if (!documentOn(state, documentId, c.plane)) throw apiErrors.notFound('document', documentId);
      // Refused rather than ignored: the caller learns nothing was added and no event fires.
      if (c.documentIds.includes(documentId))
        throw apiErrors.invalidState(`Document ${documentId} is already attached to correspondence ${id}.`);
      const at = deps.clock.now();
      c.documentIds.push(documentId);
      deps.changes.record(c, at);
      return events.emit('document.attached', { correspondence_id: id, document_id: documentId }, on(c, at));
    },

    claim(claimId) {
      const claim = state.claims.get(claimId);
      if (!claim) throw apiErrors.notFound('claim', claimId);
      if (claim.status !== 'open') throw apiErrors.invalidState(`Claim ${claimId} is already ${claim.status}.`);
      const p = participant(claim.participantId);
      const c = get(claim.correspondenceId);
      requireLive(c, `claim ${claimId}`);
      if (p.state !== 'held')
        throw apiErrors.invalidState(`Participant ${p.participantId} is ${p.state}; a claim is redeemed once the send has completed.`);
      const at = deps.clock.now();
      claim.status = 'claimed';
      deps.changes.record(c, at);
      const claimed = events.emit(
        'claim.claimed',
        { claim_id: claimId, correspondence_id: claim.correspondenceId, participant_id: p.participantId, ref: p.ref },
        on(c, at),
      );
      return [claimed, deliver(p, at)];
    },

    expireClaim(claimId) {
      const claim = state.claims.get(claimId);
      if (!claim) throw apiErrors.notFound('claim', claimId);
      if (claim.status !== 'open') throw apiErrors.invalidState(`Claim ${claimId} is already ${claim.status}.`);
      const p = participant(claim.participantId);
      if (p.state !== 'held')
        throw apiErrors.invalidState(`Participant ${p.participantId} is ${p.state}; a claim lapses once the send has completed.`);
      // Lapse is time-driven, not a file operation: it happens on a sealed or withdrawn file too.
      const c = get(claim.correspondenceId);
      const at = deps.clock.now();
      claim.status = 'expired';
      p.state = 'undeliverable';
      deps.changes.record(c, at);
      return events.emit(
        'claim.expired',
        { claim_id: claimId, correspondence_id: claim.correspondenceId, participant_id: p.participantId, ref: p.ref },
        on(c, at),
      );
    },
  };
}
