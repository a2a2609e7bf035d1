/** An open gap as the matcher sees it. */
export interface GapToMatch {
  gap_id: number;
  event_type: string;
  /** When the service created the delivery; null when it did not say. */
  delivery_created_at: Date | null;
  /** Set when the delivery named its correspondence. */
  correspondence_id: string | null;
}

/** An explanation still able to account for a gap. */
export interface ExplanationToMatch {
  explanation_id: string;
  correspondence_id: string;
  event_type: string;
  window_from: Date;
  window_to: Date;
  anchor: Date;
  single: boolean;
  /** The anchor is the change's own instant. */
  exact: boolean;
  outcome: 'recovered' | 'state_synced';
}

export interface GapMatch<E extends ExplanationToMatch> {
  gap: GapToMatch;
  explanation: E;
}

/** What fitting a gap needs of an explanation. */
type Window = Pick<ExplanationToMatch, 'correspondence_id' | 'event_type' | 'window_from' | 'window_to' | 'anchor'>;

const fits = (g: GapToMatch, e: Window): boolean => {
  if (g.event_type !== e.event_type || g.delivery_created_at === null) return false;
  if (g.correspondence_id !== null && g.correspondence_id !== e.correspondence_id) return false;
  const t = g.delivery_created_at.getTime();
  return t >= e.window_from.getTime() && t <= e.window_to.getTime();
};

/**
 * The files whose re-read could account for a gap: every explanation of its type
 * whose window holds its delivery time (only its own file when the delivery named
 * one), used or not, distinct, nearest anchor first. The delivery listing does not
 * name a file, so when more than one fits, the pairing by type and time cannot say
 * which of them is the event's own; the evidence then lists them instead of naming
 * one as if it knew.
 */
export function candidateFiles(gap: GapToMatch, explanations: readonly Window[]): string[] {
  const nearest = new Map<string, number>();
  const t = gap.delivery_created_at?.getTime() ?? 0;
  for (const e of explanations) {
    if (!fits(gap, e)) continue;
    const d = Math.abs(e.anchor.getTime() - t);
    const seen = nearest.get(e.correspondence_id);
    if (seen === undefined || d < seen) nearest.set(e.correspondence_id, d);
  }
  return [...nearest].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1)).map(([file]) => file);
}

/** A delivery this close to an explanation's anchor is taken to be that very event. */
const EXACT_MS = 1000;

/**
 * Pairs open gaps with what re-reads showed. Each gap gets at most one
 * explanation of its own type whose window holds its delivery time (and of its
 * own correspondence when the delivery named one); an explanation for a single
 * event (a created file, an act, a seal) accounts for one gap only.
 *  1. Deliveries within a second of an exact instant an explanation stands for
 *     (an act's or a creation's own time) take it, nearest first.
 *  2. The rest go in delivery order, each to the fitting explanation whose window
 *     closes first (for intervals and points this gives the most pairs, so no gap
 *     stays open because another took the only explanation it fitted): first to
 *     differences the re-read found (recovered), then to facts only a snapshot
 *     carried (state_synced).
 *  3. Gaps still left may fall to explanations for any number of events
 *     (acts superseded by a later one), narrowest window first.
 * What is not matched stays open. Deterministic: the same inputs give the same pairs.
 */
export function matchGaps<E extends ExplanationToMatch>(gaps: readonly GapToMatch[], explanations: readonly E[]): GapMatch<E>[] {
  const out: GapMatch<E>[] = [];
  const takenGaps = new Set<number>();
  const usedSingles = new Set<string>();
  const time = (g: GapToMatch): number => g.delivery_created_at!.getTime();
  const timed = gaps.filter((g) => g.delivery_created_at !== null).sort((a, b) => time(a) - time(b) || a.gap_id - b.gap_id);
  const singles = explanations.filter((e) => e.single);
  const take = (g: GapToMatch, e: E): void => {
    takenGaps.add(g.gap_id);
    if (e.single) usedSingles.add(e.explanation_id);
    out.push({ gap: g, explanation: e });
  };

  // Only an explanation of an exact instant (its window opens at its anchor: a creation, an act) can be matched by time alone.
  const precise = singles.filter((e) => e.exact);
  const exact: Array<{ g: GapToMatch; e: E; d: number }> = [];
  for (const g of timed) {
    for (const e of precise) {
      const d = Math.abs(time(g) - e.anchor.getTime());
      if (d <= EXACT_MS && fits(g, e)) exact.push({ g, e, d });
    }
  }
  exact.sort((a, b) => a.d - b.d || a.g.gap_id - b.g.gap_id || (a.e.explanation_id < b.e.explanation_id ? -1 : 1));
  for (const { g, e } of exact) if (!takenGaps.has(g.gap_id) && !usedSingles.has(e.explanation_id)) take(g, e);

  // Changes the read model lacked (recovered) before changes only a snapshot carried (state_synced): a gap is
  // more likely the event behind a difference found than one behind a fact that may have come another way.
  for (const outcome of ['recovered', 'state_synced'] as const) {
    const pool = singles.filter((e) => e.outcome === outcome);
    for (const g of timed) {
      if (takenGaps.has(g.gap_id)) continue;
      let best: E | undefined;
      for (const e of pool) {
        if (usedSingles.has(e.explanation_id) || !fits(g, e)) continue;
        if (
          !best ||
          e.window_to.getTime() < best.window_to.getTime() ||
          (e.window_to.getTime() === best.window_to.getTime() && e.explanation_id < best.explanation_id)
        )
          best = e;
      }
      if (best) take(g, best);
    }
  }

  const width = (e: ExplanationToMatch): number => e.window_to.getTime() - e.window_from.getTime();
  const many = explanations.filter((x) => !x.single).sort((a, b) => width(a) - width(b) || (a.explanation_id < b.explanation_id ? -1 : 1));
  for (const g of timed) {
    if (takenGaps.has(g.gap_id)) continue;
    const e = many.find((x) => fits(g, x));
    if (e) take(g, e);
  }
  return out;
}
