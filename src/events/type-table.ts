import { EVENT_TYPE_NAMES, type EventTypeName } from './type-names.js';

/**
 * What postroom decides by event type, one row per type. Code elsewhere asks
 * this table (or holds a `Record<EventTypeName, …>` of its own, typed against it:
 * the projection's reducer in src/projection/facts.ts, the reconciler's writers in
 * src/reconciler/synthetic.ts), so a name added to EVENT_TYPE_NAMES does not
 * compile until each of those places has decided what the new type means.
 * Loads no schema (zod), like type-names.ts.
 */
export interface EventTypeTraits {
  /**
   * How the service sends it: to the endpoints `subscribed` to it, or `on_request`
   * (the test operation, to one endpoint whatever it subscribes to). An endpoint
   * cannot subscribe to an on-request type, and a dead delivery of one is nothing
   * missed, so the reconciler makes no gap of it.
   */
  readonly delivery: 'subscribed' | 'on_request';
  /**
   * What it changes. An event about a `correspondence` names its file, so a missed
   * one is looked for in a re-read of files; any other gap stays open for on-call
   * with a reason saying there is nothing to re-read.
   */
  readonly about: 'correspondence' | 'wallet' | 'campaign' | 'endpoint';
  /**
   * What the projection keeps of it: `file`, a fact of its correspondence (status,
   * documents, send summary, last event) and of the participants it names;
   * `participant`, a fact of the one participant it names; `none`.
   */
  readonly projection: 'file' | 'participant' | 'none';
  /**
   * What a re-read of its file shows of it: `event`, the change itself, so the
   * reconciler writes an event of this type and pairs the gap with that change;
   * `participant_state`, only the state it left a participant in (a claim), so no
   * event can be written and the gap is paired with a participant changed the way
   * this type changes one, its own file not known; `nothing`.
   */
  readonly reread: 'event' | 'participant_state' | 'nothing';
  /**
   * When a missed one counts as consumed: `always`, because the projection keeps
   * its effect in a field it compares with the service; `when_handled`, only when a
   * handler (or POSTROOM_RECONCILE_CONSUMED_TYPES) takes it. A gap of a type nothing
   * consumes closes as `not_consumed`.
   */
  readonly consumed: 'always' | 'when_handled';
}

const FILE_CHANGE = {
  delivery: 'subscribed',
  about: 'correspondence',
  projection: 'file',
  reread: 'event',
  consumed: 'always',
} as const satisfies EventTypeTraits;

const CLAIM = {
  delivery: 'subscribed',
  about: 'correspondence',
  projection: 'participant',
  reread: 'participant_state',
  consumed: 'always',
} as const satisfies EventTypeTraits;

export const EVENT_TYPE_TABLE = {
  'correspondence.created': FILE_CHANGE,
  'correspondence.send_completed': FILE_CHANGE,
  'participant.acted': FILE_CHANGE,
  'document.attached': FILE_CHANGE,
  // The file shows no response: the projection records it as the file's last event, nothing it compares.
  'form.response_received': {
    delivery: 'subscribed',
    about: 'correspondence',
    projection: 'file',
    reread: 'nothing',
    consumed: 'when_handled',
  },
  'correspondence.sealed': FILE_CHANGE,
  'correspondence.withdrawn': FILE_CHANGE,
  'claim.claimed': CLAIM,
  'claim.expired': CLAIM,
  'wallet.debited': { delivery: 'subscribed', about: 'wallet', projection: 'none', reread: 'nothing', consumed: 'when_handled' },
  'campaign.status_changed': { delivery: 'subscribed', about: 'campaign', projection: 'none', reread: 'nothing', consumed: 'when_handled' },
  'webhook.test': { delivery: 'on_request', about: 'endpoint', projection: 'none', reread: 'nothing', consumed: 'when_handled' },
} as const satisfies Record<EventTypeName, EventTypeTraits>;

/** One trait of one type, as the table states it (for tables elsewhere that decide only where this one says so). */
export type EventTrait<T extends EventTypeName, K extends keyof EventTypeTraits> = (typeof EVENT_TYPE_TABLE)[T][K];

/** The row of a type, or undefined for a type the catalogue does not know. */
export function eventTypeTraits(type: string): EventTypeTraits | undefined {
  return Object.hasOwn(EVENT_TYPE_TABLE, type) ? EVENT_TYPE_TABLE[type as EventTypeName] : undefined;
}

/** The types whose row satisfies `test`, in catalogue order. */
export function eventTypesWhere(test: (traits: EventTypeTraits) => boolean): EventTypeName[] {
  return EVENT_TYPE_NAMES.filter((type) => test(EVENT_TYPE_TABLE[type]));
}
