import type { Db } from '../db/types.js';
import { PostroomError } from '../errors.js';
import { validateEvent } from '../events/validate.js';
import { INBOX_CHANNEL } from '../inbox/types.js';
import { parseEnvelope } from '../ingress/envelope.js';
import {
  countReplayable,
  getReplayCandidate,
  noteStillQuarantined,
  pageReplayable,
  type InboxCursor,
  resetForReplay,
  type ReplayCandidate,
  type ReplayFilter,
  type Reparsed,
} from '../inbox/admin-queries.js';

export type ReplayDecision =
  { action: 'reset'; reparsed?: Reparsed } | { action: 'still_invalid'; reason: string } | { action: 'refused'; reason: string };

/**
 * Whether an event can run again. A quarantined event is validated again first
 * (its body re-parsed when ingress could not parse it, then its data checked
 * against today's catalogue), so replay only queues what the worker will take.
 */
export function decideReplay(row: ReplayCandidate): ReplayDecision {
  if (row.status === 'processing') return { action: 'refused', reason: 'it is being processed right now' };
  if (row.status === 'received') return { action: 'refused', reason: 'it is already waiting to be processed' };
  if (row.payload === null && row.pruned_at !== null) return { action: 'refused', reason: 'its payload was pruned' };
  if (row.status !== 'quarantined') {
    if (row.payload === null) return { action: 'refused', reason: 'it has no payload' };
    return { action: 'reset' };
  }

  let payload = row.payload;
  let type = row.type;
  let reparsed: Reparsed | undefined;
  if (payload === null) {
    if (!row.raw_body) return { action: 'still_invalid', reason: 'no payload and no raw body kept' };
    const env = parseEnvelope(row.raw_body);
    if (!env.ok) return { action: 'still_invalid', reason: env.reason };
    if (env.eventId !== row.event_id)
      return { action: 'still_invalid', reason: `the body now parses as ${env.eventId}; re-send that event instead` };
    reparsed = { eventId: env.eventId, type: env.type, occurredAt: env.at, correspondenceId: env.correspondenceId, json: env.json };
    payload = JSON.parse(env.json) as unknown;
    type = env.type;
  }
  const validated = validateEvent({ event_id: row.event_id, type, payload });
  if (validated.kind === 'invalid') return { action: 'still_invalid', reason: validated.reason };
  return reparsed ? { action: 'reset', reparsed } : { action: 'reset' };
}

async function candidate(db: Db, eventId: string): Promise<ReplayCandidate> {
  const row = await getReplayCandidate(db, eventId);
  if (!row) throw new PostroomError('not_found', `No event ${eventId} in the inbox. List recent ones with \`postroom inbox list\`.`);
  return row;
}

/** What replaying would do, changing nothing (--dry-run). */
export async function previewReplay(db: Db, eventId: string): Promise<ReplayDecision> {
  return decideReplay(await candidate(db, eventId));
}

/**
 * Queues one event to run again: `replayed` (from the status it had), or `still_invalid` when a
 * quarantined event still fails validation. Refused (a PostroomError) while it is waiting or running.
 */
export async function replayEvent(
  db: Db,
  eventId: string,
): Promise<{ outcome: 'replayed'; from_status: string } | { outcome: 'still_invalid'; reason: string }> {
  const row = await candidate(db, eventId);
  const decision = decideReplay(row);
  if (decision.action === 'refused')
    throw new PostroomError('replay_refused', `Cannot replay ${eventId}: ${decision.reason}.`, { details: { status: row.status } });
  if (decision.action === 'still_invalid') {
    await noteStillQuarantined(db, eventId, decision.reason);
    return { outcome: 'still_invalid', reason: decision.reason };
  }
  const done = await resetForReplay(db, [{ eventId, fromStatus: row.status, reparsed: decision.reparsed }]);
  if (done.length === 0)
    throw new PostroomError(
      'replay_conflict',
      `Event ${eventId} changed while replaying it; look again with \`postroom inbox show ${eventId}\`.`,
    );
  await db.notify(INBOX_CHANNEL).catch(() => undefined);
  return { outcome: 'replayed', from_status: row.status };
}

export interface ReplaySummary {
  matched: number;
  replayed: number;
  still_invalid: number;
  /** Up to 20 examples of why quarantined events are still refused. */
  invalid_examples: Array<{ event_id: string; reason: string }>;
  dry_run: boolean;
}

const PAGE = 500;

/** Replays every event matching the filter, a page at a time; `dryRun` only counts. */
export async function replayMatching(
  db: Db,
  filter: ReplayFilter,
  options: { dryRun?: boolean; onProgress?: (done: number, total: number) => void } = {},
): Promise<ReplaySummary> {
  const matched = await countReplayable(db, filter);
  const summary: ReplaySummary = { matched, replayed: 0, still_invalid: 0, invalid_examples: [], dry_run: options.dryRun === true };
  if (options.dryRun || matched === 0) return summary;
  let after: InboxCursor | null = null;
  let seen = 0;
  for (;;) {
    const page = await pageReplayable(db, filter, after, PAGE);
    if (page.length === 0) break;
    after = page[page.length - 1]!.cursor;
    const resets: Array<{ eventId: string; fromStatus: ReplayCandidate['status']; reparsed?: Reparsed | undefined }> = [];
    for (const row of page) {
      const d = decideReplay(row);
      if (d.action === 'reset') resets.push({ eventId: row.event_id, fromStatus: row.status, reparsed: d.reparsed });
      else if (d.action === 'still_invalid') {
        summary.still_invalid++;
        if (summary.invalid_examples.length < 20) summary.invalid_examples.push({ event_id: row.event_id, reason: d.reason });
        await noteStillQuarantined(db, row.event_id, d.reason);
      }
    }
    summary.replayed += (await resetForReplay(db, resets)).length;
    seen += page.length;
    options.onProgress?.(seen, matched);
  }
  if (summary.replayed > 0) await db.notify(INBOX_CHANNEL).catch(() => undefined);
  return summary;
}
