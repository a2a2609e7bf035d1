import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchGaps, type ExplanationToMatch, type GapToMatch } from '../../src/reconciler/match.js';

const t = (s: number): Date => new Date(Date.UTC(2026, 10, 23, 12, 0, s));
const gap = (gap_id: number, event_type: string, at: number | null, correspondence_id: string | null = null): GapToMatch => ({
  gap_id,
  event_type,
  delivery_created_at: at === null ? null : t(at),
  correspondence_id,
});
const expl = (
  id: string,
  cid: string,
  event_type: string,
  from: number,
  to: number,
  anchor: number,
  single = true,
  outcome: 'recovered' | 'state_synced' = 'recovered',
): ExplanationToMatch => ({
  outcome,
  // Narrow windows opening at their anchor stand for an instant (an act, a creation).
  exact: single && outcome === 'recovered' && anchor === from,
  explanation_id: id,
  correspondence_id: cid,
  event_type,
  window_from: t(from),
  window_to: t(to),
  anchor: t(anchor),
  single,
});

describe('matchGaps', () => {
  it('leaves a gap open when no re-read shows a change of its type in its window', () => {
    expect(
      matchGaps(
        [gap(1, 'correspondence.created', 10)],
        [expl('a', 'cor_a', 'participant.acted', 0, 20, 10), expl('b', 'cor_b', 'correspondence.created', 30, 40, 31)],
      ),
    ).toEqual([]);
  });

  it('never pairs a gap whose delivery named its correspondence with another file', () => {
    expect(matchGaps([gap(1, 'participant.acted', 10, 'cor_b')], [expl('a', 'cor_a', 'participant.acted', 0, 20, 10)])).toEqual([]);
  });

  it('gives each single explanation to one gap', () => {
    const pairs = matchGaps(
      [gap(1, 'participant.acted', 12), gap(2, 'participant.acted', 10)],
      [expl('a', 'cor_a', 'participant.acted', 10, 20, 10)],
    );
    expect(pairs.map((p) => [p.gap.gap_id, p.explanation.explanation_id])).toEqual([[2, 'a']]);
  });

  it('pairs a delivery at the very instant of an act or a creation with that change first', () => {
    // The act at 10 could also fall in file b's broad window, which closes sooner; the gap at 10 is the act's all the same.
    const pairs = matchGaps(
      [gap(1, 'participant.acted', 10), gap(2, 'participant.acted', 20)],
      [expl('act', 'cor_a', 'participant.acted', 10, 59, 10), expl('broad', 'cor_b', 'participant.acted', 0, 30, 30)],
    );
    expect(pairs.map((p) => [p.gap.gap_id, p.explanation.explanation_id]).sort()).toEqual([
      [1, 'act'],
      [2, 'broad'],
    ]);
  });

  it('does not treat the end of a broad window as an exact time', () => {
    // cor_a's summary changed some time before its last change at 59; a gap near 59 is not its instant.
    const pairs = matchGaps(
      [gap(1, 'correspondence.send_completed', 10), gap(2, 'correspondence.send_completed', 58)],
      [expl('a', 'cor_a', 'correspondence.send_completed', 5, 59, 59), expl('b', 'cor_b', 'correspondence.send_completed', 0, 30, 30)],
    );
    expect(pairs.map((p) => [p.gap.gap_id, p.explanation.explanation_id]).sort()).toEqual([
      [1, 'b'],
      [2, 'a'],
    ]);
  });

  it('matches as many gaps as the windows allow (a greedy choice must not strand a gap)', () => {
    // Two files' send summaries, both known only to lie between creation and the re-read.
    const pairs = matchGaps(
      [gap(1, 'correspondence.send_completed', 10), gap(2, 'correspondence.send_completed', 55)],
      [
        expl('late', 'cor_b', 'correspondence.send_completed', 50, 59, 59),
        expl('early', 'cor_a', 'correspondence.send_completed', 0, 59, 59),
      ],
    );
    expect(pairs.map((p) => [p.gap.gap_id, p.explanation.explanation_id]).sort()).toEqual([
      [1, 'early'],
      [2, 'late'],
    ]);
  });

  it('prefers a difference the re-read found to a fact only a snapshot carried', () => {
    const pairs = matchGaps(
      [gap(1, 'document.attached', 20)],
      [
        expl('snapshot-carried', 'cor_b', 'document.attached', 5, 30, 30, true, 'state_synced'),
        expl('found', 'cor_a', 'document.attached', 0, 50, 50),
      ],
    );
    expect(pairs.map((p) => p.explanation.explanation_id)).toEqual(['found']);
  });

  it('lets leftover gaps fall to an explanation for any number of events (acts superseded by a later one)', () => {
    const pairs = matchGaps(
      [gap(1, 'participant.acted', 5), gap(2, 'participant.acted', 10)],
      [expl('last', 'cor_a', 'participant.acted', 9, 11, 10), expl('earlier', 'cor_a', 'participant.acted', 0, 9, 9, false)],
    );
    expect(pairs.map((p) => [p.gap.gap_id, p.explanation.explanation_id]).sort()).toEqual([
      [1, 'earlier'],
      [2, 'last'],
    ]);
  });

  it('never matches a gap without a delivery time', () => {
    expect(matchGaps([gap(1, 'correspondence.sealed', null)], [expl('a', 'cor_a', 'correspondence.sealed', 0, 60, 60)])).toEqual([]);
  });

  it('property: every pair is of the same type, inside the window, of the named file; singles used once; gaps once; deterministic', () => {
    const types = ['correspondence.created', 'participant.acted', 'correspondence.sealed'];
    const files = ['cor_a', 'cor_b', 'cor_c'];
    const gapArb = fc.record({
      type: fc.constantFrom(...types),
      at: fc.option(fc.integer({ min: 0, max: 59 })),
      cid: fc.option(fc.constantFrom(...files)),
    });
    const explArb = fc.record({
      type: fc.constantFrom(...types),
      cid: fc.constantFrom(...files),
      from: fc.integer({ min: 0, max: 59 }),
      len: fc.integer({ min: 0, max: 30 }),
      single: fc.boolean(),
      synced: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(gapArb, { maxLength: 20 }), fc.array(explArb, { maxLength: 20 }), (gs, es) => {
        const gaps = gs.map((g, i) => gap(i + 1, g.type, g.at, g.cid));
        const explanations = es.map((e, i) =>
          expl(`e${i}`, e.cid, e.type, e.from, Math.min(59, e.from + e.len), e.from, e.single, e.synced ? 'state_synced' : 'recovered'),
        );
        const pairs = matchGaps(gaps, explanations);
        const usedSingles = new Set<string>();
        const usedGaps = new Set<number>();
        for (const { gap: g, explanation: e } of pairs) {
          expect(g.event_type).toBe(e.event_type);
          expect(g.delivery_created_at).not.toBeNull();
          const at = g.delivery_created_at!.getTime();
          expect(at >= e.window_from.getTime() && at <= e.window_to.getTime()).toBe(true);
          if (g.correspondence_id !== null) expect(e.correspondence_id).toBe(g.correspondence_id);
          if (e.single) {
            expect(usedSingles.has(e.explanation_id)).toBe(false);
            usedSingles.add(e.explanation_id);
          }
          expect(usedGaps.has(g.gap_id)).toBe(false);
          usedGaps.add(g.gap_id);
        }
        expect(matchGaps(gaps, explanations)).toEqual(pairs);
        // Maximal: no unmatched gap fits an unused single explanation.
        const used = new Set(pairs.map((p) => p.explanation.explanation_id));
        const matched = new Set(pairs.map((p) => p.gap.gap_id));
        for (const g of gaps.filter((x) => !matched.has(x.gap_id) && x.delivery_created_at)) {
          for (const e of explanations.filter((x) => x.single && !used.has(x.explanation_id))) {
            const at = g.delivery_created_at!.getTime();
            const fitsIt =
              g.event_type === e.event_type &&
              at >= e.window_from.getTime() &&
              at <= e.window_to.getTime() &&
              (g.correspondence_id === null || g.correspondence_id === e.correspondence_id);
            expect(fitsIt).toBe(false);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
