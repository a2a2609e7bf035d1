import { EVENT_TYPE_TABLE, type EventTypeTraits } from '../events/type-table.js';
import type { HotHistogram, HotHistogramChild } from './hot.js';

/**
 * The lag of an event: its age, measured from the signature's timestamp (when the service signed the
 * delivery that reached us) and from the envelope's `at` (when the change happened at the service),
 * at acknowledgement and when the worker finishes it. Labels stay bounded: the type's group from the
 * event type table (what it is about), an outcome from a fixed list, and `since` (signed, occurred).
 */

/** Ages from tens of milliseconds to a day: the SLO's 60 s is a bound, and an outage's length still lands in a bucket. */
export const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600, 14_400, 86_400];

/** What an event is about, by the event type table; `other` for a type the catalogue does not know. */
export type TypeGroup = EventTypeTraits['about'] | 'other';

export const TYPE_GROUPS: readonly TypeGroup[] = ['correspondence', 'wallet', 'campaign', 'endpoint', 'other'];

const GROUP_INDEX = new Map<string, number>(
  Object.entries(EVENT_TYPE_TABLE).map(([type, traits]) => [type, TYPE_GROUPS.indexOf(traits.about)]),
);
const OTHER = TYPE_GROUPS.indexOf('other');

/** The index of a type's group in TYPE_GROUPS: one map lookup, nothing allocated. */
export function typeGroupIndex(type: string): number {
  return GROUP_INDEX.get(type) ?? OTHER;
}

export function typeGroupOf(type: string): TypeGroup {
  return TYPE_GROUPS[typeGroupIndex(type)]!;
}

/** Outcomes at acknowledgement: the three answers that stored (or had stored) the event. */
export const ACK_OUTCOMES = ['accepted', 'duplicate', 'quarantined'] as const;
export type AckOutcome = (typeof ACK_OUTCOMES)[number];

/** Observes an event's two ages at its acknowledgement. */
export interface AckLagRecorder {
  /** Ages in seconds: since the signature's timestamp, and since the envelope's `at` (NaN when the body was no valid envelope). */
  observe(outcome: AckOutcome, type: string, signedAgeSeconds: number, occurredAgeSeconds: number): void;
}

/**
 * The children for every label set, made up front and indexed by position: the acknowledgement is the
 * ingress hot path, so an observation is two array reads and two bucket walks, with no key built.
 */
export function createAckLagRecorder(histogram: HotHistogram): AckLagRecorder {
  const children = (since: string): HotHistogramChild[][] =>
    ACK_OUTCOMES.map((outcome) => TYPE_GROUPS.map((group) => histogram.hot({ since, type_group: group, outcome })));
  const signed = children('signed');
  const occurred = children('occurred');
  return {
    observe(outcome, type, signedAgeSeconds, occurredAgeSeconds) {
      const o = outcome === 'accepted' ? 0 : outcome === 'duplicate' ? 1 : 2;
      const g = typeGroupIndex(type);
      signed[o]![g]!.observe(Math.max(0, signedAgeSeconds));
      // NaN (no valid `at`) is skipped by the child.
      occurred[o]![g]!.observe(Math.max(0, occurredAgeSeconds));
    },
  };
}

/** The signature header's timestamp (`t=<unix seconds>`), or NaN: read again at processing, where only the header is stored. */
export function signedAtSeconds(header: string | null): number {
  if (header === null || !header.startsWith('t=')) return NaN;
  const comma = header.indexOf(',');
  const t = Number(header.slice(2, comma === -1 ? undefined : comma));
  return Number.isSafeInteger(t) ? t : NaN;
}
