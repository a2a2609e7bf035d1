import type { Clock } from '../clock.js';
import type { RecipientInput } from './addressing.js';
import type { EventType, ParticipantAct, Plane } from './catalogue.js';
import type { CorrespondenceService } from './correspondence.js';
import { createDocument } from './documents.js';
import type { EndpointService } from './endpoints.js';
import type { EventLog } from './events.js';
import type { IdFactory } from './ids.js';
import type { Correspondence, SandboxEvent, SandboxState } from './state.js';

export interface TriggerOptions {
  /** participant.acted only: which act (default read). */
  act?: ParticipantAct;
  /** The plane the changes happen on (default sandbox); wallet.debited is always the live plane's. */
  plane?: Plane;
}

export interface Triggers {
  /**
   * Fires one event of `type` (one per active endpoint for webhook.test) through a real
   * state change. `events` is everything the change fired, `fired` the requested ones.
   */
  fire(type: EventType, options?: TriggerOptions): { events: SandboxEvent[]; fired: SandboxEvent[] };
  /** A webhook.test event to one endpoint, whatever it subscribes to; `plane` given, only an endpoint of that plane. */
  test(endpointId: string, plane?: Plane): SandboxEvent;
}

const CAMPAIGN_STATUSES = ['scheduled', 'running', 'paused', 'running', 'completed'];

/**
 * Synthetic activity for `POST /sandbox/trigger` and `postroom sandbox trigger`.
 * Each event comes from the same operation a real caller would cause, so the
 * sandbox's state stays the truth the events describe (the reconciler relies on it).
 */
export function createTriggers(deps: {
  state: SandboxState;
  correspondence: CorrespondenceService;
  endpoints: EndpointService;
  events: EventLog;
  ids: IdFactory;
  clock: Clock;
}): Triggers {
  const { state, correspondence } = deps;
  let serial = 0;

  /** Eleven-digit synthetic NINs; the last digit picks the outcome (see addressing.ts). */
  const recipient = (lastDigit: 0 | 8 | 9): RecipientInput => {
    serial++;
    return {
      addressing: { type: 'nin', nin: `${String(serial).padStart(10, '0')}${lastDigit}` },
      display_name: `Synthetic Recipient ${serial}`,
      ref: `synthetic-${serial}`,
    };
  };
  let plane: Plane = 'sandbox';
  const send = (type: string, options: { queued?: boolean; plane?: Plane; recipients?: RecipientInput[] } = {}): Correspondence =>
    correspondence.create(
      {
        kind: 'notice',
        subject: `Triggered ${type}`,
        content_type: 'text/plain',
        document_ids: [],
        recipients: options.recipients ?? [recipient(0), recipient(0)],
      },
      { plane: options.plane ?? plane, queued: options.queued ?? false },
    );
  const since = (mark: number): SandboxEvent[] => deps.events.list().slice(mark);

  /** The newest live, sent file with a delivered participant, else a fresh one. */
  const deliveredParticipant = (type: string): string => {
    const all = [...state.correspondences.values()];
    for (let i = all.length - 1; i >= 0; i--) {
      const c = all[i]!;
      if (c.plane !== plane || c.status !== 'live' || c.queued) continue;
      const p = c.participants.find((x) => x.state === 'delivered');
      if (p) return p.participantId;
    }
    return send(type).participants[0]!.participantId;
  };
  const liveCorrespondence = (type: string): string => {
    const all = [...state.correspondences.values()];
    for (let i = all.length - 1; i >= 0; i--) if (all[i]!.plane === plane && all[i]!.status === 'live') return all[i]!.correspondenceId;
    return send(type).correspondenceId;
  };

  return {
    fire(type, options = {}) {
      const mark = deps.events.size;
      plane = options.plane ?? 'sandbox';
      switch (type) {
        case 'correspondence.created':
          send(type);
          break;
        case 'correspondence.send_completed':
          // Completed at once so the trigger can report the event it was asked for.
          correspondence.completeSend(
            send(type, { queued: true, recipients: [recipient(0), recipient(8), recipient(9)] }).correspondenceId,
          );
          break;
        case 'participant.acted':
          correspondence.act(deliveredParticipant(type), options.act ?? 'read');
          break;
        case 'form.response_received':
          correspondence.act(deliveredParticipant(type), 'submitted');
          break;
        case 'document.attached': {
          const doc = createDocument(
            deps,
            {
              filename: `attachment-${serial + 1}.txt`,
              media_type: 'text/plain',
              content_base64: Buffer.from(`synthetic attachment ${serial + 1}`).toString('base64'),
            },
            plane,
          );
          correspondence.attach(liveCorrespondence(type), doc.documentId);
          break;
        }
        case 'correspondence.sealed':
          correspondence.seal(send(type).correspondenceId);
          break;
        case 'correspondence.withdrawn':
          correspondence.withdraw(send(type).correspondenceId);
          break;
        case 'claim.claimed':
        case 'claim.expired': {
          serial++;
          const c = send(type, {
            recipients: [{ addressing: { type: 'claim_code', name: `Claimant ${serial}` }, ref: `claimant-${serial}` }],
          });
          const claimId = c.participants[0]!.claimId!;
          if (type === 'claim.claimed') correspondence.claim(claimId);
          else correspondence.expireClaim(claimId);
          break;
        }
        case 'wallet.debited':
          send(type, { plane: 'live' });
          break;
        case 'campaign.status_changed': {
          const campaignId = deps.ids.next('cmp');
          const status = CAMPAIGN_STATUSES[state.campaigns.size % CAMPAIGN_STATUSES.length]!;
          state.campaigns.set(campaignId, { campaignId, status });
          deps.events.emit('campaign.status_changed', { campaign_id: campaignId, status }, { plane });
          break;
        }
        case 'webhook.test':
          for (const e of state.endpoints.values()) if (e.active && e.plane === plane) this.test(e.endpointId);
          break;
      }
      const events = since(mark);
      // The requested event is the last of its type: a change may fire others of the same type first
      // (a new file's deliveries before the act that was asked for).
      const ofType = events.filter((e) => e.type === type);
      return { events, fired: type === 'webhook.test' ? ofType : ofType.slice(-1) };
    },
    test(endpointId, onPlane) {
      const e = deps.endpoints.get(endpointId, onPlane);
      return deps.events.emit(
        'webhook.test',
        { message: `Test event from the postroom sandbox for endpoint ${endpointId}.` },
        { endpointId, plane: e.plane },
      );
    },
  };
}
