import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishProbe, latestProbes, recordProbeEvent, startProbe, storedProbeEvent } from '../../src/probe/probe-queries.js';
import { advanceCompleteness, completenessOf } from '../../src/reconciler/completeness-queries.js';
import { isProbeEvent } from '../../src/worker/probe-events.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

/** What keeps probes from piling up and watermarks from moving back, on every store postroom runs on. */
describe.each(await availableStoreKinds())('probe and watermark guards on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.cleanup());

  it('allows one probe in flight per plane and endpoint, none too soon after the last, and closes a stale one', async () => {
    const db = store.db;
    const first = await startProbe(db, { plane: 'sandbox', endpointId: 'we_g', minIntervalMs: 0, staleMs: 60_000 });
    expect(first).toHaveProperty('probeId');
    expect(await startProbe(db, { plane: 'sandbox', endpointId: 'we_g', minIntervalMs: 0, staleMs: 60_000 })).toEqual({
      skipped: 'in_flight',
    });
    // The other plane's endpoint of the same id is another endpoint.
    const other = await startProbe(db, { plane: 'live', endpointId: 'we_g', minIntervalMs: 0, staleMs: 60_000 });
    expect(other).toHaveProperty('probeId');

    // Until the answer names the event, a webhook.test landing now is taken for the probe's; after, only its own.
    expect(await isProbeEvent(db, 'evt_someone_else', new Date())).toBe(true);
    if (!('probeId' in first) || !('probeId' in other)) throw new Error('not started');
    await recordProbeEvent(db, first.probeId, 'evt_g');
    await finishProbe(db, { probeId: other.probeId, outcome: 'never_delivered', roundTripMs: null, detail: 'x', eventId: 'evt_h' });
    expect(await isProbeEvent(db, 'evt_someone_else', new Date())).toBe(false);
    expect(await isProbeEvent(db, 'evt_g', new Date())).toBe(true);
    expect(await storedProbeEvent(db, { probeId: first.probeId, eventId: 'evt_g' })).toBeUndefined();

    await finishProbe(db, { probeId: first.probeId, outcome: 'ok', roundTripMs: 12, detail: null, eventId: 'evt_g' });
    expect(await startProbe(db, { plane: 'sandbox', endpointId: 'we_g', minIntervalMs: 60_000, staleMs: 60_000 })).toEqual({
      skipped: 'too_soon',
    });
    const third = await startProbe(db, { plane: 'sandbox', endpointId: 'we_g', minIntervalMs: 0, staleMs: 60_000 });
    if (!('probeId' in third)) throw new Error('not started');
    // A probe whose process died is closed once it is older than the stale age.
    const fourth = await startProbe(db, { plane: 'sandbox', endpointId: 'we_g', minIntervalMs: 0, staleMs: 0 });
    expect(fourth).toHaveProperty('probeId');
    const latest = await latestProbes(db);
    expect(latest.map((p) => [p.plane, p.endpoint_id, p.outcome])).toEqual([
      ['live', 'we_g', 'never_delivered'],
      ['sandbox', 'we_g', 'never_delivered'],
    ]);
    expect(latest[1]!.last_ok_at).not.toBeNull();
    expect(latest[0]!.last_ok_at).toBeNull();
  });

  it('keeps the greater watermark and the run that proved it', async () => {
    const db = store.db;
    const at = (s: number): Date => new Date(Date.UTC(2026, 11, 6, 2, 0, s));
    expect(await advanceCompleteness(db, { plane: 'sandbox', endpointId: 'we_w', completeThrough: at(30), runId: 1 })).toBe(true);
    expect(await advanceCompleteness(db, { plane: 'sandbox', endpointId: 'we_w', completeThrough: at(10), runId: 2 })).toBe(false);
    expect(await advanceCompleteness(db, { plane: 'sandbox', endpointId: 'we_w', completeThrough: at(30), runId: 3 })).toBe(false);
    expect((await completenessOf(db, 'sandbox', ['we_w'])).get('we_w')).toMatchObject({ complete_through: at(30), run_id: 1 });
    expect(await advanceCompleteness(db, { plane: 'sandbox', endpointId: 'we_w', completeThrough: at(40), runId: 4 })).toBe(true);
    expect((await completenessOf(db, 'sandbox', ['we_w'])).get('we_w')).toMatchObject({ complete_through: at(40), run_id: 4 });
    expect((await completenessOf(db, 'live', ['we_w'])).size).toBe(0);
  });
});
