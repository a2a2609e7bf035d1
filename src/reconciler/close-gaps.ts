import type { Db } from '../db/types.js';
import { eventTypeTraits } from '../events/type-table.js';
import { CORRESPONDENCE_SCOPED_TYPES } from './dead-deliveries.js';
import { explanationsOf, insertExplanations, usedExplanationIds, type ExplanationWindow } from './explanation-queries.js';
import { closeGapWithEvidence, openGapsToMatch, type GapScope } from './gap-queries.js';
import { candidateFiles, matchGaps } from './match.js';
import type { Explanation } from './synthetic.js';

/**
 * Closes the open gaps that files re-read in this run explain, each with its
 * evidence: which correspondence, re-read when, what it showed and which
 * synthetic event made it good. Only gaps first seen before the re-read began
 * and only explanations of files re-read in this run count.
 *
 * The delivery listing does not name the event's file, so a gap is paired with an
 * explanation by type and time. When the delivery named its file, or only one of
 * every changed file the service listed fits, the evidence names the gap's own
 * file. When several fit, any of them may be the event's: the evidence says so
 * and lists them, and names the paired one only as the explanation used. Each of
 * those files was re-read and synced, so the claim holds for the set, but on-call
 * must not be sent to one file as if it were known to be the event's. A claim's
 * own file may show nothing of it, so a claim's evidence names no file as its
 * own, however many fit.
 *
 * What a file shows now but no re-read stored (`standing`) is stored when it
 * closes a gap, as used: one standing for a single event then closes one gap
 * only, in this run or any later one that shows it again.
 */
export async function closeExplainedGaps(
  db: Db,
  p: {
    rereadIds: readonly string[];
    standing: readonly Explanation[];
    seenBefore: Date;
    rereadAt: Date;
    runId: number | null;
    /**
     * How the files were found: the service's listing of every changed file, or only the files postroom
     * knows (no listing), when a gap's own file may not have been re-read at all.
     */
    source: 'listing' | 'known';
    /** Files whose re-read failed in this run: any of them may be an unnamed gap's own file. */
    failedCount: number;
    /** Only gaps of the plane whose files were re-read (every open gap when left out). */
    scope?: GapScope;
  },
): Promise<{ recovered: number; stateSynced: number }> {
  const out = { recovered: 0, stateSynced: 0 };
  if (p.rereadIds.length === 0) return out;
  const all = await openGapsToMatch(db, CORRESPONDENCE_SCOPED_TYPES, p.seenBefore, p.scope);
  // A failed re-read may be the very file an unnamed gap is about: pairing it with another file's change now
  // could close it while its own change was never seen. It waits for the next run (its reason says so).
  const gaps = p.failedCount > 0 ? all.filter((g) => g.correspondence_id !== null) : all;
  if (gaps.length === 0) return out;
  const used = await usedExplanationIds(
    db,
    p.standing.filter((e) => e.single).map((e) => e.explanation_id),
  );
  const standing = p.standing.filter((e) => !used.has(e.explanation_id));
  const standingIds = new Set(standing.map((e) => e.explanation_id));
  const stored = await explanationsOf(db, p.rereadIds);
  const explanations = [...stored.filter((e) => e.available), ...standing];
  // Which files a gap could be about counts changes already used by other gaps too: its own may be one of them.
  const windowsByType = new Map<string, ExplanationWindow[]>();
  for (const w of [...stored, ...p.standing]) {
    const list = windowsByType.get(w.event_type);
    if (list) list.push(w);
    else windowsByType.set(w.event_type, [w]);
  }
  for (const { gap, explanation: e } of matchGaps(gaps, explanations)) {
    const deltaMs = gap.delivery_created_at ? gap.delivery_created_at.getTime() - e.anchor.getTime() : null;
    const attribution = attributionOf(gap, candidateFiles(gap, windowsByType.get(gap.event_type) ?? []), e.correspondence_id, p.source);
    const paired = `paired by type and time with ${e.correspondence_id}`;
    const outcome = e.outcome === 'recovered' ? 'recovered' : 'state synced';
    const closed = await db.transaction(async (tx) => {
      if (e.single && standingIds.has(e.explanation_id)) await insertExplanations(tx, [e], p.runId);
      return closeGapWithEvidence(tx, {
        gapId: gap.gap_id,
        status: e.outcome,
        explanationId: e.explanation_id,
        single: e.single,
        reason:
          attribution.attribution === 'claim_pairing'
            ? `${outcome}: a claim's file cannot be told from its delivery, and a later act can hide the claim in its own file; ` +
              `${paired}, one of ${attribution.candidate_count} re-read file(s) with a participant changed as a claim changes one in this delivery's window: ${e.detail}`
            : attribution.attribution === 'type_and_time'
              ? `${outcome} from a re-read of one of ${attribution.candidate_count} file(s) that show a ${gap.event_type} in this delivery's window ` +
                `(the delivery does not name its file${p.source === 'known' ? ', and without the service listing only files postroom knows were re-read' : ''}; ${paired}): ${e.detail}`
              : `${outcome} from a re-read of ${e.correspondence_id}: ${e.detail}`,
        evidence: {
          kind: 'reread',
          correspondence_id: e.correspondence_id,
          ...attribution,
          reread_source: p.source,
          participant_id: e.participant_id,
          reread_at: p.rereadAt.toISOString(),
          run_id: p.runId,
          explanation_id: e.explanation_id,
          synthetic_event_id: e.synthetic_event_id,
          detail: e.detail,
          window: [e.window_from.toISOString(), e.window_to.toISOString()],
          delivery_created_at: gap.delivery_created_at?.toISOString() ?? null,
          delta_ms: deltaMs,
        },
      });
    });
    if (!closed) continue;
    if (e.outcome === 'recovered') out.recovered++;
    else out.stateSynced++;
  }
  return out;
}

/** At most this many candidate files are listed in a gap's evidence (their count is always given). */
const MAX_LISTED_CANDIDATES = 20;

/**
 * How the gap's file is known: the delivery named it, or it is the only re-read
 * file that fits (of every changed file the listing gave), or it is one of several
 * that fit by type and time (or of the files postroom knows, without a listing),
 * or (a claim) it is not known. The paired file is always among the listed candidates.
 */
function attributionOf(
  gap: { correspondence_id: string | null; event_type: string },
  candidates: readonly string[],
  paired: string,
  source: 'listing' | 'known',
): {
  attribution: 'named_by_delivery' | 'only_fitting_file' | 'type_and_time' | 'claim_pairing';
  candidate_count: number;
  candidate_correspondence_ids: string[];
} {
  if (gap.correspondence_id !== null)
    return { attribution: 'named_by_delivery', candidate_count: 1, candidate_correspondence_ids: [paired] };
  const listed = [paired, ...candidates.filter((c) => c !== paired)].slice(0, MAX_LISTED_CANDIDATES);
  const count = Math.max(1, candidates.length);
  // A claim's own file need not show it (a read or a signature after the delivery hides when it was delivered),
  // so even a sole fitting file is not known to be the claim's.
  if (isClaim(gap.event_type)) return { attribution: 'claim_pairing', candidate_count: count, candidate_correspondence_ids: listed };
  // Without the listing, a file postroom does not know may be the event's: a sole fit among known files is not enough.
  if (candidates.length <= 1 && source === 'listing')
    return { attribution: 'only_fitting_file', candidate_count: 1, candidate_correspondence_ids: [paired] };
  return { attribution: 'type_and_time', candidate_count: count, candidate_correspondence_ids: listed };
}

/** A claim shows in a re-read only as the state it left a participant in (src/events/type-table.ts). */
const isClaim = (type: string): boolean => eventTypeTraits(type)?.reread === 'participant_state';
