import type { Clock } from '../clock.js';
import type { DeliveryStatus, Plane } from './catalogue.js';
import { apiErrors } from './errors.js';
import type { IdFactory } from './ids.js';
import { createSortedIndex, type SortedIndex } from './sorted-index.js';
import type { SandboxEvent } from './state.js';

/** A delivery as the sandbox keeps it: times as epoch ms, the spec's shape made on output. */
export interface Delivery {
  /** Creation order; fault decisions are keyed on it so a seed reproduces them. */
  seq: number;
  deliveryId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastError: string;
  createdAt: number;
  deliveredAt: number | undefined;
  /** The event to send; absent on bulk-seeded records, which are history only. */
  event: SandboxEvent | undefined;
  /** The endpoint's plane: only keys of this plane see the record. */
  plane: Plane;
}

/** The webhook delivery record exactly as the spec lists it. */
export interface DeliveryRecord {
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_error: string;
  created_at: string;
  delivered_at: string | null;
}

export function toRecord(d: Delivery): DeliveryRecord {
  return {
    delivery_id: d.deliveryId,
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    last_error: d.lastError,
    created_at: new Date(d.createdAt).toISOString(),
    delivered_at: d.deliveredAt === undefined ? null : new Date(d.deliveredAt).toISOString(),
  };
}

export interface DeliveryQuery {
  limit: number;
  status?: DeliveryStatus | undefined;
  endpointId?: string | undefined;
  cursor?: string | undefined;
  /** Only this plane's deliveries (the API); undefined for every plane (the control routes). */
  plane?: Plane | undefined;
}

export interface DeliveryPage {
  deliveries: Delivery[];
  nextCursor: string | null;
}

export interface SeedDeliveries {
  endpointId: string;
  plane: Plane;
  count: number;
  status: DeliveryStatus;
  eventType?: string;
  lastError?: string;
}

export interface DeliveryStore {
  create(fields: { endpointId: string; event: SandboxEvent }): Delivery;
  setStatus(d: Delivery, status: DeliveryStatus): void;
  get(deliveryId: string): Delivery | undefined;
  /** The newest delivery to an endpoint. */
  latestFor(endpointId: string): Delivery | undefined;
  page(query: DeliveryQuery): DeliveryPage;
  seed(spec: SeedDeliveries): { count: number; first: string | undefined; last: string | undefined };
  counts(): Record<DeliveryStatus, number>;
  readonly size: number;
}

type Key = { createdAt: number; deliveryId: string };
const keyOf = (d: Delivery): Key => d;
const compare = (a: Key, b: Key): number =>
  a.createdAt - b.createdAt || (a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0);

/**
 * Deliveries ordered by (created_at, delivery_id), ascending: new deliveries append at
 * the end, so a walk through the pages never skips one created meanwhile. Each filter
 * combination has its own sorted index, so a filtered page is a binary search plus a
 * slice: O(log n + page), whatever the total.
 */
export function createDeliveryStore(deps: { clock: Clock; ids: IdFactory }): DeliveryStore {
  const byId = new Map<string, Delivery>();
  const indexes = new Map<string, SortedIndex<Delivery, Key>>();
  const counts: Record<DeliveryStatus, number> = { pending: 0, delivered: 0, dead: 0 };
  let seq = 0;

  const index = (name: string): SortedIndex<Delivery, Key> => {
    let idx = indexes.get(name);
    if (!idx) {
      idx = createSortedIndex(keyOf, compare);
      indexes.set(name, idx);
    }
    return idx;
  };
  /** endpoint id → its plane, so a filter on another plane's endpoint finds nothing. */
  const endpointPlane = new Map<string, Plane>();
  // Global indexes serve the control routes; the plane ones the API. An endpoint's own indexes are of one plane.
  const statusIndexes = (d: Delivery): string[] => [`s:${d.status}`, `${d.plane}|s:${d.status}`, `e:${d.endpointId}|${d.status}`];

  const add = (d: Delivery): void => {
    byId.set(d.deliveryId, d);
    endpointPlane.set(d.endpointId, d.plane);
    counts[d.status]++;
    for (const name of ['all', `${d.plane}|all`, `e:${d.endpointId}`, ...statusIndexes(d)]) index(name).insert(d);
  };

  return {
    get size() {
      return byId.size;
    },
    create({ endpointId, event }) {
      const d: Delivery = {
        seq: ++seq,
        deliveryId: deps.ids.next('dlv'),
        endpointId,
        eventId: event.event_id,
        eventType: event.type,
        status: 'pending',
        attempts: 0,
        lastError: '',
        createdAt: deps.clock.now(),
        deliveredAt: undefined,
        event,
        plane: event.plane,
      };
      add(d);
      return d;
    },
    setStatus(d, status) {
      if (d.status === status) return;
      for (const name of statusIndexes(d)) index(name).remove(d);
      counts[d.status]--;
      d.status = status;
      counts[status]++;
      for (const name of statusIndexes(d)) index(name).insert(d);
    },
    get: (id) => byId.get(id),
    latestFor(endpointId) {
      const items = indexes.get(`e:${endpointId}`)?.all();
      return items?.[items.length - 1];
    },
    page(query) {
      const plane = query.plane === undefined ? '' : `${query.plane}|`;
      const name =
        query.endpointId !== undefined
          ? query.status
            ? `e:${query.endpointId}|${query.status}`
            : `e:${query.endpointId}`
          : query.status
            ? `${plane}s:${query.status}`
            : `${plane}all`;
      const idx = indexes.get(name);
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      if (!idx || (query.plane !== undefined && query.endpointId !== undefined && endpointPlane.get(query.endpointId) !== query.plane))
        return { deliveries: [], nextCursor: null };
      const { items, more } = idx.after(after, query.limit);
      const last = items[items.length - 1];
      return { deliveries: items, nextCursor: more && last ? encodeCursor(last) : null };
    },
    seed(spec) {
      // History only: one timestamp for the batch keeps every insert an append.
      const now = deps.clock.now();
      let first: string | undefined;
      let last: string | undefined;
      for (let i = 0; i < spec.count; i++) {
        const s = ++seq;
        const deliveryId = deps.ids.next('dlv');
        const d: Delivery = {
          seq: s,
          deliveryId,
          endpointId: spec.endpointId,
          eventId: deps.ids.next('evt_seed'),
          eventType: spec.eventType ?? 'participant.acted',
          status: spec.status,
          attempts: spec.status === 'pending' ? 0 : spec.status === 'dead' ? 6 : 1,
          lastError: spec.status === 'dead' ? (spec.lastError ?? 'HTTP 503 from endpoint (seeded)') : '',
          createdAt: now,
          deliveredAt: spec.status === 'delivered' ? now : undefined,
          event: undefined,
          plane: spec.plane,
        };
        add(d);
        first ??= deliveryId;
        last = deliveryId;
      }
      return { count: spec.count, first, last };
    },
    counts: () => ({ ...counts }),
  };
}

/** Opaque to clients; a position (created_at, delivery_id), so it stays valid as statuses change. */
export function encodeCursor(d: Key): string {
  return Buffer.from(`v1:${d.createdAt}:${d.deliveryId}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): Key {
  const text = cursor.length <= 400 ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const m = /^v1:(\d{1,16}):([A-Za-z0-9_]{1,100})$/.exec(text);
  if (!m) throw apiErrors.invalid('cursor', 'not a cursor this API returned; pass next_cursor back unchanged');
  return { createdAt: Number(m[1]), deliveryId: m[2]! };
}
