import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeExplainedGaps } from '../../src/reconciler/close-gaps.js';
import { insertExplanations } from '../../src/reconciler/explanation-queries.js';
import { upsertGaps } from '../../src/reconciler/gap-queries.js';
import type { Explanation } from '../../src/reconciler/synthetic.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

/**
 * The service's delivery listing does not name an event's file, so the reconciler
 * pairs a gap with a re-read by type and time. Found by running the demo through
 * a long outage: with several files acting in one window, most `participant.acted`
 * gaps were closed "from a re-read of" a file that was not the event's, and the
 * evidence named that file as if it were known. Evidence now names a file as the
 * event's only when the delivery named it or it is the only file that fits, and
 * otherwise lists every file that fits.
 */
describe.each(kinds)('which file a closed gap names (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.cleanup();
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE reconcile_gaps, reconcile_explanations');
  });

  const gap = (n: number, at: string, correspondenceId: string | null = null) => ({
    eventId: `evt_act_${n}`,
    eventType: 'participant.acted',
    endpointId: 'we_1',
    deliveryId: `dlv_act_${n}`,
    deliveryCreatedAt: at,
    lastError: 'connection refused',
    correspondenceId,
    reason: null,
  });
  /** An act superseded by a later one: the file shows only that it happened between the file's creation and its latest act. */
  const superseded = (file: string, from: string, to: string): Explanation => ({
    explanation_id: `rec_superseded_${file}`,
    correspondence_id: file,
    event_type: 'participant.acted',
    participant_id: `par_${file}`,
    window_from: new Date(from),
    window_to: new Date(to),
    anchor: new Date(to),
    exact: false,
    outcome: 'state_synced',
    single: true,
    synthetic_event_id: null,
    detail: `an act of participant par_${file} before its latest`,
  });
  const close = (files: string[], how: { source?: 'listing' | 'known'; failedCount?: number } = {}) =>
    closeExplainedGaps(store.db, {
      rereadIds: files,
      standing: [],
      seenBefore: new Date(Date.now() + 60_000),
      rereadAt: new Date(),
      runId: 1,
      source: how.source ?? 'listing',
      failedCount: how.failedCount ?? 0,
    });
  /** Stores superseded acts of these files, each [file, window from, window to]. */
  const storeSuperseded = (...acts: Array<[string, string, string]>) =>
    insertExplanations(
      store.db,
      acts.map(([file, from, to]) => superseded(file, from, to)),
      1,
    );
  const gapRow = async (eventId: string) =>
    (
      await store.db.query<{ status: string; reason: string; evidence: Record<string, unknown> }>(
        'SELECT status, reason, evidence FROM reconcile_gaps WHERE event_id = $1',
        [eventId],
      )
    ).rows[0]!;

  it('lists every file that fits when several do, and names none of them as the event’s own', async () => {
    await storeSuperseded(
      ['cor_a', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'],
      ['cor_b', '2026-11-26T10:00:01.000Z', '2026-11-26T10:00:06.000Z'],
      ['cor_c', '2026-11-26T10:00:09.000Z', '2026-11-26T10:00:12.000Z'],
    );
    await upsertGaps(store.db, [gap(1, '2026-11-26T10:00:02.000Z')]);
    expect(await close(['cor_a', 'cor_b', 'cor_c'])).toEqual({ recovered: 0, stateSynced: 1 });
    const row = await gapRow('evt_act_1');
    expect(row.status).toBe('state_synced');
    // The matcher used cor_a's explanation (its window closes first); cor_b fits as well, cor_c does not.
    expect(row.evidence).toMatchObject({
      correspondence_id: 'cor_a',
      attribution: 'type_and_time',
      candidate_count: 2,
      candidate_correspondence_ids: ['cor_a', 'cor_b'],
    });
    expect(row.reason).toContain('one of 2 file(s) that show a participant.acted');
    expect(row.reason).not.toMatch(/^state synced from a re-read of cor_a:/);
  });

  it('names the file as the event’s own when it is the only one that fits', async () => {
    await storeSuperseded(
      ['cor_a', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'],
      ['cor_c', '2026-11-26T10:00:09.000Z', '2026-11-26T10:00:12.000Z'],
    );
    await upsertGaps(store.db, [gap(1, '2026-11-26T10:00:02.000Z')]);
    expect(await close(['cor_a', 'cor_c'])).toEqual({ recovered: 0, stateSynced: 1 });
    const row = await gapRow('evt_act_1');
    expect(row.evidence).toMatchObject({
      correspondence_id: 'cor_a',
      attribution: 'only_fitting_file',
      candidate_count: 1,
      candidate_correspondence_ids: ['cor_a'],
    });
    expect(row.reason).toMatch(/^state synced from a re-read of cor_a:/);
  });

  it('counts a change another gap already used as a file the gap could be about', async () => {
    // cor_g's change closed another gap in an earlier run (paired by type and time); cor_h's is still unused.
    await storeSuperseded(
      ['cor_g', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'],
      ['cor_h', '2026-11-26T10:00:01.000Z', '2026-11-26T10:00:06.000Z'],
    );
    await store.db.exec(`UPDATE reconcile_explanations SET used_by_gap = 424242 WHERE correspondence_id = 'cor_g'`);
    await upsertGaps(store.db, [gap(1, '2026-11-26T10:00:02.000Z')]);
    expect(await close(['cor_g', 'cor_h'])).toEqual({ recovered: 0, stateSynced: 1 });
    expect((await gapRow('evt_act_1')).evidence).toMatchObject({
      correspondence_id: 'cor_h',
      attribution: 'type_and_time',
      candidate_count: 2,
      candidate_correspondence_ids: ['cor_h', 'cor_g'],
    });
  });

  it('names no file as a claim’s own, even the only one that fits: a later act can hide a claim in its own file', async () => {
    await insertExplanations(
      store.db,
      [{ ...superseded('cor_a', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'), event_type: 'claim.claimed' }],
      1,
    );
    await upsertGaps(store.db, [{ ...gap(1, '2026-11-26T10:00:02.000Z'), eventType: 'claim.claimed' }]);
    expect(await close(['cor_a'])).toEqual({ recovered: 0, stateSynced: 1 });
    const row = await gapRow('evt_act_1');
    expect(row.evidence).toMatchObject({
      correspondence_id: 'cor_a',
      attribution: 'claim_pairing',
      candidate_count: 1,
      candidate_correspondence_ids: ['cor_a'],
    });
    expect(row.reason).toMatch(/^state synced: a claim's file cannot be told from its delivery/);
  });

  it('names no file as the event’s own without the service’s listing: a file postroom does not know may be it', async () => {
    await storeSuperseded(['cor_a', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z']);
    await upsertGaps(store.db, [gap(1, '2026-11-26T10:00:02.000Z')]);
    expect(await close(['cor_a'], { source: 'known' })).toEqual({ recovered: 0, stateSynced: 1 });
    const row = await gapRow('evt_act_1');
    expect(row.evidence).toMatchObject({
      attribution: 'type_and_time',
      candidate_count: 1,
      candidate_correspondence_ids: ['cor_a'],
      reread_source: 'known',
    });
    expect(row.reason).toContain('only files postroom knows were re-read');
  });

  it('leaves a gap that names no file open while any re-read failed: the failed file may be its own', async () => {
    await storeSuperseded(
      ['cor_a', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'],
      ['cor_b', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'],
    );
    await upsertGaps(store.db, [gap(1, '2026-11-26T10:00:02.000Z'), gap(2, '2026-11-26T10:00:03.000Z', 'cor_b')]);
    // One file's re-read failed: the gap that names its file (cor_b, re-read fine) closes; the other waits.
    expect(await close(['cor_a', 'cor_b'], { failedCount: 1 })).toEqual({ recovered: 0, stateSynced: 1 });
    expect((await gapRow('evt_act_1')).status).toBe('open');
    expect((await gapRow('evt_act_2')).evidence).toMatchObject({ correspondence_id: 'cor_b', attribution: 'named_by_delivery' });
    // The next run re-reads everything: the gap closes then.
    expect(await close(['cor_a', 'cor_b'])).toEqual({ recovered: 0, stateSynced: 1 });
    expect((await gapRow('evt_act_1')).status).toBe('state_synced');
  });

  it('names the file the delivery named, whatever else fits by time', async () => {
    await storeSuperseded(
      ['cor_a', '2026-11-26T10:00:00.000Z', '2026-11-26T10:00:05.000Z'],
      ['cor_b', '2026-11-26T10:00:01.000Z', '2026-11-26T10:00:06.000Z'],
    );
    await upsertGaps(store.db, [gap(1, '2026-11-26T10:00:02.000Z', 'cor_b')]);
    expect(await close(['cor_a', 'cor_b'])).toEqual({ recovered: 0, stateSynced: 1 });
    const row = await gapRow('evt_act_1');
    expect(row.evidence).toMatchObject({ correspondence_id: 'cor_b', attribution: 'named_by_delivery', candidate_count: 1 });
  });
});
