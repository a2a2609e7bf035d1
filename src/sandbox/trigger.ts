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

interface TriggerDeps {
  state: SandboxState;
  correspondence: CorrespondenceService;
  endpoints: EndpointService;
  events: EventLog;
  ids: IdFactory;
  clock: Clock;
}

/** What firing a type needs: the services, the plane of this trigger, and ways to find or make a file to act on. */
interface TriggerKit {
  deps: TriggerDeps;
  plane: Plane;
  /** Eleven-digit synthetic NINs; the last digit picks the outcome (see addressing.ts). */
  recipient(lastDigit: 0 | 8 | 9): RecipientInput;
  /** A claim-code recipient. */
  claimant(): RecipientInput;
  send(type: string, options?: { queued?: boolean; plane?: Plane; recipients?: RecipientInput[] }): Correspondence;
  /** The newest live, sent file with a delivered participant, else a fresh one. */
  deliveredParticipant(type: string): string;
  liveCorrespondence(type: string): string;
  /** The next attachment's number. */
  nextSerial(): number;
  test(endpointId: string): void;
}

/** The real state change behind each type: the same operation a caller of the service would make. */
const FIRE: Record<EventType, (kit: TriggerKit, options: TriggerOptions) => void> = {
  'correspondence.created': (kit) => void kit.send('correspondence.created'),
  'correspondence.send_completed': (kit) => {
    // Completed at once so the trigger can report the event it was asked for.
    const c = kit.send('correspondence.send_completed', {
      queued: true,
      recipients: [kit.recipient(0), kit.recipient(8), kit.recipient(9)],
    });
    kit.deps.correspondence.completeSend(c.correspondenceId);
  },
  'participant.acted': (kit, options) => {
    kit.deps.correspondence.act(kit.deliveredParticipant('participant.acted'), options.act ?? 'read');
  },
  'form.response_received': (kit) => {
    kit.deps.correspondence.act(kit.deliveredParticipant('form.response_received'), 'submitted');
  },
  'document.attached': (kit) => {
    const n = kit.nextSerial();
    const doc = createDocument(
      kit.deps,
      {
        filename: `attachment-${n}.txt`,
        media_type: 'text/plain',
        content_base64: Buffer.from(`synthetic attachment ${n}`).toString('base64'),
      },
      kit.plane,
    );
    kit.deps.correspondence.attach(kit.liveCorrespondence('document.attached'), doc.documentId);
  },
  'correspondence.sealed': (kit) => kit.deps.correspondence.seal(kit.send('correspondence.sealed').correspondenceId),
  'correspondence.withdrawn': (kit) => kit.deps.correspondence.withdraw(kit.send('correspondence.withdrawn').correspondenceId),
  'claim.claimed': (kit) => {
    const c = kit.send('claim.claimed', { recipients: [kit.claimant()] });
    kit.deps.correspondence.claim(c.participants[0]!.claimId!);
  },
  'claim.expired': (kit) => {
    const c = kit.send('claim.expired', { recipients: [kit.claimant()] });
    kit.deps.correspondence.expireClaim(c.participants[0]!.claimId!);
  },
  'wallet.debited': (kit) => void kit.send('wallet.debited', { plane: 'live' }),
  'campaign.status_changed': (kit) => {
    const { state } = kit.deps;
    const campaignId = kit.deps.ids.next('cmp');
    const status = CAMPAIGN_STATUSES[state.campaigns.size % CAMPAIGN_STATUSES.length]!;
    state.campaigns.set(campaignId, { campaignId, status });
    kit.deps.events.emit('campaign.status_changed', { campaign_id: campaignId, status }, { plane: kit.plane });
  },
  'webhook.test': (kit) => {
    for (const e of kit.deps.state.endpoints.values()) if (e.active && e.plane === kit.plane) kit.test(e.endpointId);
  },
};

/**
 * Synthetic activity for `POST /sandbox/trigger` and `postroom sandbox trigger`.
 * Each event comes from the same operation a real caller would cause, so the
 * sandbox's state stays the truth the events describe (the reconciler relies on it).
 */
export function createTriggers(deps: TriggerDeps): Triggers {
  const kit = createKit(deps);
  const triggers: Triggers = {
    fire(type, options = {}) {
      const mark = deps.events.size;
      kit.plane = options.plane ?? 'sandbox';
      FIRE[type](kit, options);
      const events = deps.events.list().slice(mark);
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
  kit.test = (endpointId) => void triggers.test(endpointId);
  return triggers;
}

function createKit(deps: TriggerDeps): TriggerKit {
  const { state, correspondence } = deps;
  let serial = 0;
  const kit: TriggerKit = {
    deps,
    plane: 'sandbox',
    recipient(lastDigit) {
      serial++;
      return {
        addressing: { type: 'nin', nin: `${String(serial).padStart(10, '0')}${lastDigit}` },
        display_name: `Synthetic Recipient ${serial}`,
        ref: `synthetic-${serial}`,
      };
    },
    claimant() {
      serial++;
      return { addressing: { type: 'claim_code', name: `Claimant ${serial}` }, ref: `claimant-${serial}` };
    },
    send(type, options = {}) {
      return correspondence.create(
        {
          kind: 'notice',
          subject: `Triggered ${type}`,
          content_type: 'text/plain',
          document_ids: [],
          recipients: options.recipients ?? [kit.recipient(0), kit.recipient(0)],
        },
        { plane: options.plane ?? kit.plane, queued: options.queued ?? false },
      );
    },
    deliveredParticipant(type) {
      const all = [...state.correspondences.values()];
      for (let i = all.length - 1; i >= 0; i--) {
        const c = all[i]!;
        if (c.plane !== kit.plane || c.status !== 'live' || c.queued) continue;
        const p = c.participants.find((x) => x.state === 'delivered');
        if (p) return p.participantId;
      }
      return kit.send(type).participants[0]!.participantId;
    },
    liveCorrespondence(type) {
      const all = [...state.correspondences.values()];
      for (let i = all.length - 1; i >= 0; i--)
        if (all[i]!.plane === kit.plane && all[i]!.status === 'live') return all[i]!.correspondenceId;
      return kit.send(type).correspondenceId;
    },
    nextSerial: () => serial + 1,
    test: () => undefined,
  };
  return kit;
}
