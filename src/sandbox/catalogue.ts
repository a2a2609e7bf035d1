import type { EventTypeName } from '../events/type-names.js';

/** Names the spec fixes: scopes, event types, delivery statuses, and the act values docs/events.md lists. */

export const SCOPES = [
  'org.read',
  'members.read',
  'directory.read',
  'storage.read',
  'documents.read',
  'documents.write',
  'plans.read',
  'plans.write',
  'correspondence.read',
  'correspondence.write',
  'recipients.check',
  'responses.read',
  'responses.sensitive',
  'responses.erase',
  'claims.read',
  'claims.write',
  'metrics.read',
  'wallet.read',
  'invoices.read',
  'webhooks.read',
  'webhooks.write',
  'audit.read',
  'apikeys.read',
  'apikeys.write',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Types an endpoint may subscribe to. webhook.test is deliberately absent: it cannot be subscribed. */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'correspondence.created',
  'correspondence.send_completed',
  'participant.acted',
  'document.attached',
  'form.response_received',
  'correspondence.sealed',
  'correspondence.withdrawn',
  'claim.claimed',
  'claim.expired',
  'wallet.debited',
  'campaign.status_changed',
] as const;
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];

export const EVENT_TYPES = [...SUBSCRIBABLE_EVENT_TYPES, 'webhook.test'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The sandbox sends exactly the types postroom's catalogue knows (src/events/type-names.ts):
 * a name added to either list fails to compile here until the other has it too, and then
 * in trigger.ts until the sandbox can fire it.
 */
type Unshared = Exclude<EventType, EventTypeName> | Exclude<EventTypeName, EventType>;
const noneUnshared: [Unshared] extends [never] ? true : Unshared = true;
void noneUnshared;

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

export function isSubscribable(value: string): value is SubscribableEventType {
  return (SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(value);
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead';
export const DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const satisfies readonly DeliveryStatus[];

/** Acts a participant can perform through the control routes (`delivered` comes from delivery itself). */
export type ParticipantAct = 'read' | 'approved' | 'signed' | 'consent_given' | 'consent_declined' | 'submitted';
export const PARTICIPANT_ACTS = [
  'read',
  'approved',
  'signed',
  'consent_given',
  'consent_declined',
  'submitted',
] as const satisfies readonly ParticipantAct[];

export type ParticipantState = 'pending' | 'held' | 'delivered' | 'undeliverable';
export type CorrespondenceStatus = 'live' | 'sealed' | 'withdrawn';

export type Plane = 'sandbox' | 'live';
export const PLANES = ['sandbox', 'live'] as const satisfies readonly Plane[];

// Each union above is written out so that the public API needs no list to name it; each list holds every member.
type Unlisted =
  | Exclude<DeliveryStatus, (typeof DELIVERY_STATUSES)[number]>
  | Exclude<ParticipantAct, (typeof PARTICIPANT_ACTS)[number]>
  | Exclude<Plane, (typeof PLANES)[number]>;
const everyMemberListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyMemberListed;

export const KEY_PREFIXES: Readonly<Record<Plane, string>> = { sandbox: 'svc_sandbox_', live: 'svc_live_' };
