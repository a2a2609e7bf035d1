import type { Queryable } from '../db/types.js';
import type { AnyKnownEvent } from '../events/catalogue.js';
import { collectFacts } from './facts.js';
import { upsertCorrespondenceFacts, upsertParticipantFacts } from './queries.js';

/**
 * Applies validated events to the projection: two set-based statements however
 * many events. Idempotent and order-independent, so a retry or a replay that
 * applies an event again changes nothing, and events may arrive in any order.
 * `fromReread`: ids of the events the reconciler wrote from a re-read.
 */
export async function applyToProjection(
  tx: Queryable,
  events: readonly AnyKnownEvent[],
  fromReread: ReadonlySet<string> = new Set(),
): Promise<void> {
  if (events.length === 0) return;
  const facts = collectFacts(events, fromReread);
  // Correspondence first, participants second: every worker takes row locks in this order.
  await upsertCorrespondenceFacts(tx, facts.correspondence, facts.documents);
  await upsertParticipantFacts(tx, facts.participants);
}
