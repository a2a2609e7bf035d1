import type { Activity } from './activity.js';
import type { Addressing } from './addressing.js';
import {
  SUBSCRIBABLE_EVENT_TYPES,
  isEventType,
  type DeliveryStatus,
  type EventType,
  type ParticipantAct,
  type Plane,
  PARTICIPANT_ACTS,
  EVENT_TYPES,
} from './catalogue.js';
import type { CorrespondenceService } from './correspondence.js';
import { toRecord, type DeliveryRecord, type DeliveryStore } from './deliveries.js';
import type { Dispatcher, FaultLogEntry } from './dispatcher.js';
import { createDocument } from './documents.js';
import type { EndpointService } from './endpoints.js';
import { apiErrors } from './errors.js';
import type { EventLog } from './events.js';
import type { FailureWindow, FaultConfig, Faults } from './faults.js';
import type { IdFactory } from './ids.js';
import type { Clock } from '../clock.js';
import { correspondenceView, type CorrespondenceView, type EndpointView, type SandboxEvent, type SandboxState } from './state.js';
import type { Triggers } from './trigger.js';
import type { Wallet } from './wallet.js';

export interface EventSummary {
  event_id: string;
  type: EventType;
  at: string;
  correspondence_id: string | null;
}

/**
 * What the `/sandbox/...` control routes do, callable in-process. Not part of the
 * service: it stands in for recipients, the portal and the network.
 */
export interface SandboxControl {
  correspondence(correspondenceId: string): CorrespondenceView;
  /** Every correspondence with its full state, in creation order (what a projection must equal). */
  listCorrespondence(): CorrespondenceView[];
  /** Every event generated, in order. */
  events(filter?: { type?: string; correspondenceId?: string }): EventSummary[];
  event(eventId: string): EventSummary & { data: Record<string, unknown> };
  claims(): Array<{ claim_id: string; correspondence_id: string; participant_id: string; status: 'open' | 'claimed' | 'expired' }>;

  act(participantId: string, act: ParticipantAct): EventSummary[];
  /** The recipient verified: its held items deliver, each firing participant.acted (act delivered). */
  verifyRecipient(addressing: Addressing): { participant_ids: string[]; events: EventSummary[] };
  verifyParticipant(participantId: string): { participant_ids: string[]; events: EventSummary[] };
  /** Drains a queued send now instead of after the queue delay (tests that must see the pending state first); the events it fired. */
  completeSend(correspondenceId: string): EventSummary[];
  seal(correspondenceId: string): EventSummary;
  withdraw(correspondenceId: string): EventSummary;
  /** Attaches the document, or a small synthetic one when none is named. */
  attach(correspondenceId: string, documentId?: string): EventSummary;
  claim(claimId: string): EventSummary[];
  expireClaim(claimId: string): EventSummary;
  /** On the sandbox plane unless `plane` says otherwise. */
  campaignStatus(input: { campaignId?: string; status: string; plane?: Plane }): EventSummary;
  /** `fired`: the events of `type` asked for; `events`: everything the changes fired, in order. On the sandbox plane unless `plane` says otherwise. */
  trigger(
    type: EventType,
    options?: { count?: number; act?: ParticipantAct; plane?: Plane },
  ): { fired: EventSummary[]; events: EventSummary[] };
  /**
   * A webhook endpoint without the API (URL rules still apply); subscribes to every type unless `events` is given.
   * It belongs to `plane` (default sandbox) and receives only that plane's events.
   */
  registerEndpoint(input: { url: string; events?: string[]; plane?: Plane }): Promise<EndpointView & { secret: string }>;

  faults(): FaultConfig;
  setFaults(patch: Partial<FaultConfig>): FaultConfig;
  openFailureWindow(input: { durationMs: number; endpointId?: string }): FailureWindow;
  closeFailureWindow(): void;
  faultLog(): FaultLogEntry[];

  /** History-only records, cheaply: for paging and reconcile benchmarks at 100k+. */
  seedDeliveries(input: { endpointId: string; count: number; status?: DeliveryStatus; eventType?: string }): {
    count: number;
    first_delivery_id: string | null;
    last_delivery_id: string | null;
  };
  deliveries(query?: { limit?: number; status?: DeliveryStatus; endpointId?: string; cursor?: string }): {
    deliveries: DeliveryRecord[];
    next_cursor: string | null;
  };

  wallet(): { balance: number; currency: string; price_per_recipient: number };
  fundWallet(amount: number): { balance: number; currency: string; price_per_recipient: number };
  stats(): {
    seed: number;
    events: number;
    correspondences: number;
    endpoints: number;
    deliveries: Record<DeliveryStatus, number> & { total: number };
    in_flight: number;
    busy: number;
  };
  /** Resolves once no delivery is pending and no queued send is draining. */
  waitForIdle(timeoutMs?: number): Promise<void>;
}

export const MAX_TRIGGER_COUNT = 10_000;
export const MAX_SEED_COUNT = 1_000_000;

export function summarise(e: SandboxEvent): EventSummary {
  return { event_id: e.event_id, type: e.type, at: e.at, correspondence_id: e.correspondenceId ?? null };
}

interface ControlDeps {
  state: SandboxState;
  correspondence: CorrespondenceService;
  endpoints: EndpointService;
  events: EventLog;
  deliveries: DeliveryStore;
  dispatcher: Dispatcher;
  faults: Faults;
  triggers: Triggers;
  wallet: Wallet;
  activity: Activity;
  ids: IdFactory;
  clock: Clock;
}

export function createControl(deps: ControlDeps): SandboxControl {
  return { ...readControls(deps), ...changeControls(deps), ...faultControls(deps), ...accountControls(deps) };
}

type Controls<K extends keyof SandboxControl> = Pick<SandboxControl, K>;

/** What the sandbox holds: files, events and claims, as the control routes show them. */
function readControls(deps: ControlDeps): Controls<'correspondence' | 'listCorrespondence' | 'events' | 'event' | 'claims'> {
  const { state, correspondence } = deps;
  return {
    correspondence: (id) => correspondenceView(correspondence.get(id)),
    listCorrespondence: () => [...state.correspondences.values()].map(correspondenceView),
    events(filter = {}) {
      const out: EventSummary[] = [];
      for (const e of deps.events.list()) {
        if (filter.type !== undefined && e.type !== filter.type) continue;
        if (filter.correspondenceId !== undefined && e.correspondenceId !== filter.correspondenceId) continue;
        out.push(summarise(e));
      }
      return out;
    },
    event(id) {
      const e = deps.events.get(id);
      if (!e) throw apiErrors.notFound('event', id);
      return { ...summarise(e), data: e.data };
    },
    claims: () =>
      [...state.claims.values()].map((c) => ({
        claim_id: c.claimId,
        correspondence_id: c.correspondenceId,
        participant_id: c.participantId,
        status: c.status,
      })),
  };
}

/** Changes a caller of the service would cause: acts, verifications, seals, attachments, claims, campaigns, triggered events. */
function changeControls(
  deps: ControlDeps,
): Controls<
  | 'act'
  | 'verifyRecipient'
  | 'verifyParticipant'
  | 'completeSend'
  | 'seal'
  | 'withdraw'
  | 'attach'
  | 'claim'
  | 'expireClaim'
  | 'campaignStatus'
  | 'trigger'
  | 'registerEndpoint'
> {
  const { state, correspondence } = deps;
  return {
    act(participantId, act) {
      if (!(PARTICIPANT_ACTS as readonly string[]).includes(act))
        throw apiErrors.invalid('act', `expected one of ${PARTICIPANT_ACTS.join(', ')}`);
      return correspondence.act(participantId, act).map(summarise);
    },
    verifyRecipient(addressing) {
      const mark = deps.events.size;
      const released = correspondence.verify({ addressing });
      return { participant_ids: released.map((p) => p.participantId), events: deps.events.list().slice(mark).map(summarise) };
    },
    verifyParticipant(participantId) {
      const mark = deps.events.size;
      const released = correspondence.verify({ participantId });
      return { participant_ids: released.map((p) => p.participantId), events: deps.events.list().slice(mark).map(summarise) };
    },
    completeSend(id) {
      const mark = deps.events.size;
      correspondence.completeSend(id);
      return deps.events.list().slice(mark).map(summarise);
    },
    seal: (id) => summarise(correspondence.seal(id)),
    withdraw: (id) => summarise(correspondence.withdraw(id)),
    attach(id, documentId) {
      const c = correspondence.get(id);
      const docId =
        documentId ??
        createDocument(
          deps,
          { filename: 'attachment.txt', media_type: 'text/plain', content_base64: Buffer.from(`attachment for ${id}`).toString('base64') },
          c.plane,
        ).documentId;
      return summarise(correspondence.attach(id, docId));
    },
    claim: (claimId) => correspondence.claim(claimId).map(summarise),
    expireClaim: (claimId) => summarise(correspondence.expireClaim(claimId)),
    campaignStatus({ campaignId, status, plane = 'sandbox' }) {
      if (typeof status !== 'string' || !/^[a-z_]{1,40}$/.test(status))
        throw apiErrors.invalid('status', 'expected a lower-case status name such as running or completed');
      const id = campaignId ?? deps.ids.next('cmp');
      state.campaigns.set(id, { campaignId: id, status });
      return summarise(deps.events.emit('campaign.status_changed', { campaign_id: id, status }, { plane }));
    },
    trigger(type, options = {}) {
      if (!isEventType(type)) throw apiErrors.invalid('type', `expected one of ${EVENT_TYPES.join(', ')}`);
      const count = options.count ?? 1;
      if (!Number.isInteger(count) || count < 1 || count > MAX_TRIGGER_COUNT)
        throw apiErrors.invalid('count', `expected a whole number from 1 to ${MAX_TRIGGER_COUNT}`);
      if (options.act !== undefined && !(PARTICIPANT_ACTS as readonly string[]).includes(options.act))
        throw apiErrors.invalid('act', `expected one of ${PARTICIPANT_ACTS.join(', ')}`);
      const fired: EventSummary[] = [];
      const events: EventSummary[] = [];
      for (let i = 0; i < count; i++) {
        const r = deps.triggers.fire(type, {
          ...(options.act ? { act: options.act } : {}),
          ...(options.plane ? { plane: options.plane } : {}),
        });
        for (const e of r.events) events.push(summarise(e));
        for (const e of r.fired) fired.push(summarise(e));
      }
      return { fired, events };
    },
    registerEndpoint: (input) =>
      deps.endpoints.create({ url: input.url, events: input.events ?? [...SUBSCRIBABLE_EVENT_TYPES] }, input.plane ?? 'sandbox'),
  };
}

/** Faults, failure windows and delivery records made to order. */
function faultControls(
  deps: ControlDeps,
): Controls<'faults' | 'setFaults' | 'openFailureWindow' | 'closeFailureWindow' | 'faultLog' | 'seedDeliveries' | 'deliveries'> {
  return {
    faults: () => deps.faults.config(),
    setFaults(patch) {
      try {
        return deps.faults.set(patch);
      } catch (err) {
        throw apiErrors.invalid('faults', (err as Error).message);
      }
    },
    openFailureWindow({ durationMs, endpointId }) {
      try {
        return deps.faults.openFailureWindow(durationMs, endpointId);
      } catch (err) {
        throw apiErrors.invalid('duration_ms', (err as Error).message);
      }
    },
    closeFailureWindow: () => deps.faults.closeFailureWindow(),
    faultLog: () => deps.dispatcher.faultLog(),

    seedDeliveries({ endpointId, count, status = 'dead', eventType }) {
      if (!Number.isInteger(count) || count < 1 || count > MAX_SEED_COUNT)
        throw apiErrors.invalid('count', `expected a whole number from 1 to ${MAX_SEED_COUNT}`);
      if (!['pending', 'delivered', 'dead'].includes(status)) throw apiErrors.invalid('status', 'expected pending, delivered or dead');
      if (eventType !== undefined && !isEventType(eventType))
        throw apiErrors.invalid('event_type', `expected one of ${EVENT_TYPES.join(', ')}`);
      const endpoint = deps.endpoints.get(endpointId);
      const r = deps.deliveries.seed({
        endpointId,
        plane: endpoint.plane,
        count,
        status,
        ...(eventType === undefined ? {} : { eventType }),
      });
      return { count: r.count, first_delivery_id: r.first ?? null, last_delivery_id: r.last ?? null };
    },
    deliveries(query = {}) {
      const page = deps.deliveries.page({
        limit: query.limit ?? 100,
        status: query.status,
        endpointId: query.endpointId,
        cursor: query.cursor,
      });
      return { deliveries: page.deliveries.map(toRecord), next_cursor: page.nextCursor };
    },
  };
}

/** The wallet, the sandbox's counts, and waiting until nothing is in flight. */
function accountControls(deps: ControlDeps): Controls<'wallet' | 'fundWallet' | 'stats' | 'waitForIdle'> {
  const { state } = deps;
  const walletView = (): { balance: number; currency: string; price_per_recipient: number } => ({
    balance: deps.wallet.balance,
    currency: deps.wallet.currency,
    price_per_recipient: deps.wallet.pricePerRecipient,
  });
  return {
    wallet: walletView,
    fundWallet(amount) {
      if (!Number.isInteger(amount) || amount < 1 || amount > 1e12)
        throw apiErrors.invalid('amount', 'expected a whole number of minor units from 1 to 10^12');
      deps.wallet.fund(amount);
      return walletView();
    },
    stats() {
      const counts = deps.deliveries.counts();
      return {
        seed: deps.faults.seed,
        events: deps.events.size,
        correspondences: state.correspondences.size,
        endpoints: state.endpoints.size,
        deliveries: { ...counts, total: deps.deliveries.size },
        in_flight: deps.dispatcher.inFlight,
        busy: deps.activity.busy,
      };
    },
    waitForIdle: (timeoutMs) => deps.activity.idle(timeoutMs),
  };
}
