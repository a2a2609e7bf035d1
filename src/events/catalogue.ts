import { z } from 'zod';
import type { EventTypeName } from './type-names.js';

/**
 * Every event type the spec names, with the `data` shape docs/events.md fixes.
 * This map is the single source for the TypeScript types and the runtime
 * validation. Schemas are loose on purpose: unknown fields are kept and any
 * `act` string is accepted, so the service can add fields without us
 * quarantining its events; only what postroom relies on is required.
 */
// Ids are stored in indexed columns: bounded like ingress bounds event ids.
const id = z.string().min(1).max(256);
// Counts land in integer columns; a larger value is a broken event, not a big send.
const count = z.number().int().nonnegative().max(2_147_483_647);

const participantSnapshot = z.looseObject({
  participant_id: id,
  ref: z.string(),
  state: z.string().max(64),
});

export const EVENT_CATALOGUE = {
  'correspondence.created': z.looseObject({
    correspondence_id: id,
    kind: z.string().optional(),
    subject: z.string().optional(),
    status: z.string().optional(),
    content_type: z.string().optional(),
    document_ids: z.array(id).max(1000).optional(),
    /** The file's created_at as GET /correspondence/{id} returns it, when sent; an unparseable value is ignored, not quarantined. */
    created_at: z.string().max(64).optional(),
    participants: z.array(participantSnapshot).optional(),
  }),
  'correspondence.send_completed': z.looseObject({
    correspondence_id: id,
    delivered: count,
    held: count,
    undeliverable: count,
    total: count,
  }),
  'participant.acted': z.looseObject({
    correspondence_id: id,
    participant_id: id,
    /** `delivered`, `read`, `approved`, `signed`, `consent_given`, `consent_declined`, `submitted`, or any other string. */
    act: z.string().min(1).max(256),
    ref: z.string(),
  }),
  'document.attached': z.looseObject({
    correspondence_id: id,
    document_id: id,
  }),
  'form.response_received': z.looseObject({
    correspondence_id: id,
    participant_id: id,
    response_id: z.string().optional(),
  }),
  'correspondence.sealed': z.looseObject({
    correspondence_id: id,
    covenant_id: z.string().optional(),
  }),
  'correspondence.withdrawn': z.looseObject({
    correspondence_id: id,
  }),
  'claim.claimed': z.looseObject({
    claim_id: id,
    correspondence_id: z.string().optional(),
    participant_id: z.string().optional(),
    ref: z.string().optional(),
  }),
  'claim.expired': z.looseObject({
    claim_id: id,
    correspondence_id: z.string().optional(),
    participant_id: z.string().optional(),
    ref: z.string().optional(),
  }),
  'wallet.debited': z.looseObject({
    /** Minor units. */
    amount: z.number().int(),
    currency: z.string().optional(),
    correspondence_id: z.string().optional(),
    balance: z.number().optional(),
  }),
  'campaign.status_changed': z.looseObject({
    campaign_id: id,
    status: z.string().min(1),
  }),
  'webhook.test': z.looseObject({
    message: z.string(),
  }),
} as const satisfies Record<EventTypeName, z.ZodType>;

export type EventCatalogue = typeof EVENT_CATALOGUE;
export type EventType = keyof EventCatalogue;
export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

/**
 * Drops the index signature loose schemas infer, so a typo such as
 * `event.data.participantId` is a compile error. The extra fields are still there
 * at run time (validation keeps them); read one with a cast when you need it.
 */
export type KnownFields<T> =
  T extends ReadonlyArray<infer U>
    ? Array<KnownFields<U>>
    : T extends object
      ? { [K in keyof T as string extends K ? never : K]: KnownFields<T[K]> }
      : T;

/** The validated `data` of an event type. */
export type EventData<T extends EventType> = KnownFields<z.infer<EventCatalogue[T]>>;

export function isKnownEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_CATALOGUE, type);
}

/** A verified, validated event as handlers receive it: the service's envelope with typed `data`. */
export interface PostroomEvent<T extends EventType = EventType> {
  event_id: string;
  type: T;
  /** ISO 8601 timestamp of the occurrence, as the service sent it. */
  at: string;
  data: EventData<T>;
}

/** Any known event, as a discriminated union on `type` (narrow with `switch (event.type)`). */
export type AnyKnownEvent = { [T in EventType]: PostroomEvent<T> }[EventType];

/** An event whose type is not in the catalogue: passed through untyped, never an error. */
export interface UnknownEvent {
  event_id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
}
