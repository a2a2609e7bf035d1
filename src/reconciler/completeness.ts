import type { Db } from '../db/types.js';
import { advanceCompleteness, completenessOf, openGapPin } from './completeness-queries.js';

/**
 * What one endpoint's walk in this run saw: `horizon` is when its walk of pending deliveries began, less the
 * settle margin (a delivery the service created later was not seen); `pendingPin` the earliest pending delivery
 * that is not complete (src/reconciler/dead-deliveries.ts, findAtRisk).
 */
export interface EndpointEvidence {
  endpointId: string;
  horizon: Date;
  pendingPin: Date | null;
}

/**
 * The completeness watermark of each endpoint, from this run's evidence: the latest T such that every delivery
 * created for it before T is in the inbox or is a gap closed with evidence, and none before T is still pending
 * past the at-risk age. Why the walk proves it: pending deliveries are walked before dead ones, and both states
 * after pending (delivered, dead) are final. A delivery created before the horizon was therefore either pending
 * when the pending walk read its page (it pins), or already delivered (postroom answered 2xx only after its
 * commit; `postroom audit` checks it), or dead before the dead walk began, where it became a gap unless its
 * event is in the inbox. So T is the earliest of the horizon, the pending pin and the earliest open gap.
 *
 * Stored with the run that proved it, only forward. Not proved (the stored value kept): endpoints the service
 * does not list for this plane's key, and a run narrowed with `since` past the stored watermark (it did not
 * look at dead deliveries before `since`). The result: each endpoint's watermark after the run, null if none.
 */
export async function proveCompleteness(
  db: Db,
  p: {
    plane: string;
    runId: number | null;
    evidence: readonly EndpointEvidence[];
    /** Endpoints the service lists for this plane's key: only their watermarks can be proved with it. */
    planeEndpoints: ReadonlySet<string>;
    since?: Date | undefined;
  },
): Promise<Record<string, string | null>> {
  const stored = await completenessOf(
    db,
    p.plane,
    p.evidence.map((e) => e.endpointId),
  );
  const out: Record<string, string | null> = {};
  for (const e of p.evidence) {
    const mark = stored.get(e.endpointId)?.complete_through ?? null;
    out[e.endpointId] = mark?.toISOString() ?? null;
    if (!p.planeEndpoints.has(e.endpointId)) continue;
    if (p.since && (mark === null || p.since > mark)) continue;
    const gaps = await openGapPin(db, e.endpointId, mark);
    if (gaps.undated) continue;
    const through = earliest([e.horizon, e.pendingPin, gaps.earliest]);
    if (mark !== null && through <= mark) continue;
    await advanceCompleteness(db, { plane: p.plane, endpointId: e.endpointId, completeThrough: through, runId: p.runId });
    out[e.endpointId] = through.toISOString();
  }
  return out;
}

function earliest(dates: ReadonlyArray<Date | null>): Date {
  return new Date(Math.min(...dates.filter((d): d is Date => d !== null).map((d) => d.getTime())));
}

/** The stored watermarks of these endpoints of one plane (null where none is proved yet), as reports print them. */
export async function storedCompleteThrough(db: Db, plane: string, endpointIds: readonly string[]): Promise<Record<string, string | null>> {
  const stored = await completenessOf(db, plane, endpointIds);
  return Object.fromEntries(endpointIds.map((id) => [id, stored.get(id)?.complete_through.toISOString() ?? null]));
}
