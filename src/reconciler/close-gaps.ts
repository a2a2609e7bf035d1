import type { Db } from '../db/types.js';
import { CORRESPONDENCE_SCOPED_TYPES } from './dead-deliveries.js';
import { availableExplanations, insertExplanations, usedExplanationIds } from './explanation-queries.js';
import { closeGapWithEvidence, openGapsToMatch } from './gap-queries.js';
import { matchGaps } from './match.js';
import type { Explanation } from './synthetic.js';

/**
 * Closes the open gaps that files re-read in this run explain, each with its
 * evidence: which correspondence, re-read when, what it showed and which
 * synthetic event made it good. Only gaps first seen before the re-read began
 * and only explanations of files re-read in this run count.
 *
 * What a file shows now but no re-read stored (`standing`) is stored when it
 * closes a gap, as used: one standing for a single event then closes one gap
 * only, in this run or any later one that shows it again.
 */
export async function closeExplainedGaps(
  db: Db,
  p: { rereadIds: readonly string[]; standing: readonly Explanation[]; seenBefore: Date; rereadAt: Date; runId: number | null },
): Promise<{ recovered: number; stateSynced: number }> {
  const out = { recovered: 0, stateSynced: 0 };
  if (p.rereadIds.length === 0) return out;
  const gaps = await openGapsToMatch(db, CORRESPONDENCE_SCOPED_TYPES, p.seenBefore);
  if (gaps.length === 0) return out;
  const used = await usedExplanationIds(
    db,
    p.standing.filter((e) => e.single).map((e) => e.explanation_id),
  );
  const standing = p.standing.filter((e) => !used.has(e.explanation_id));
  const standingIds = new Set(standing.map((e) => e.explanation_id));
  const explanations = [...(await availableExplanations(db, p.rereadIds)), ...standing];
  for (const { gap, explanation: e } of matchGaps(gaps, explanations)) {
    const deltaMs = gap.delivery_created_at ? gap.delivery_created_at.getTime() - e.anchor.getTime() : null;
    const closed = await db.transaction(async (tx) => {
      if (e.single && standingIds.has(e.explanation_id)) await insertExplanations(tx, [e], p.runId);
      return closeGapWithEvidence(tx, {
        gapId: gap.gap_id,
        status: e.outcome,
        explanationId: e.explanation_id,
        single: e.single,
        reason: `${e.outcome === 'recovered' ? 'recovered' : 'state synced'} from a re-read of ${e.correspondence_id}: ${e.detail}`,
        evidence: {
          kind: 'reread',
          correspondence_id: e.correspondence_id,
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
