import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/client/client.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createReconciler } from '../../src/reconciler/reconcile.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';

const sandboxKey = `svc_sandbox_${randomBytes(16).toString('hex')}`;
const liveKey = `svc_live_${randomBytes(16).toString('hex')}`;
// A live key that may walk deliveries but not read files: its run records the live gap and cannot close it.
const liveWalkOnlyKey = `svc_live_${randomBytes(16).toString('hex')}`;

/**
 * One database serving endpoints of both planes. A run with one plane's key re-reads that plane's files only,
 * so what it finds can close that plane's gaps and move that plane's watermarks, never the other's.
 */
describe('planes kept apart in one database', () => {
  let store: TestStore;
  let sandbox: Sandbox;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    sandbox = await startSandbox({
      allowPrivateTargets: true,
      retrySchedule: [0.02, 0.02],
      attemptTimeoutMs: 500,
      seed: 65,
      keys: [sandboxKey, liveKey, { key: liveWalkOnlyKey, scopes: ['webhooks.read'] }],
    });
  }, 60_000);

  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  const reconciler = (apiKey: string) =>
    createReconciler({
      db: store.db,
      api: createApiClient({ baseUrl: sandbox.url, apiKey }),
      logger: silentLogger(),
      clock: systemClock,
      defaults: { watermarkSettleMs: 0 },
    });

  it("a sandbox run's re-read neither closes a live gap nor moves a live watermark", async () => {
    // The live endpoint points nowhere: its deliveries die. The sandbox plane has no endpoint at all.
    const live = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${await freePort()}/webhooks`, plane: 'live' });
    // The sandbox file first: the live event falls inside the window its re-read explains.
    sandbox.control.trigger('correspondence.created');
    await new Promise((r) => setTimeout(r, 20));
    sandbox.control.trigger('correspondence.created', { plane: 'live' });
    await sandbox.control.waitForIdle(20_000);

    // The live run records the gap, then fails at the re-read (its key may not read files).
    await expect(reconciler(liveWalkOnlyKey).run()).rejects.toThrow();
    const gaps = await store.db.query<{ event_id: string; status: string; endpoint_id: string }>(
      `SELECT event_id, status, endpoint_id FROM reconcile_gaps WHERE event_type = 'correspondence.created'`,
    );
    expect(gaps.rows).toHaveLength(1);
    expect(gaps.rows[0]).toMatchObject({ status: 'open', endpoint_id: live.endpoint_id });

    // The sandbox run re-reads a sandbox file created at the same moment, of the same type: it must not pair it
    // with the live gap.
    const sandboxRun = await reconciler(sandboxKey).run();
    expect(sandboxRun.ran).toBe(true);
    const after = await store.db.query<{ status: string }>(`SELECT status FROM reconcile_gaps WHERE event_id = $1`, [
      gaps.rows[0]!.event_id,
    ]);
    expect(after.rows[0]!.status).toBe('open');
    const marks = await store.db.query<{ plane: string; endpoint_id: string }>('SELECT plane, endpoint_id FROM reconcile_completeness');
    expect(marks.rows.filter((r) => r.endpoint_id === live.endpoint_id)).toEqual([]);

    // The live plane's own evidence closes it, and only then does the live endpoint get a watermark past it.
    const liveRun = await reconciler(liveKey).run();
    expect(liveRun.ran && liveRun.summary.gaps_open).toBe(0);
    const closed = await store.db.query<{ status: string }>(`SELECT status FROM reconcile_gaps WHERE event_id = $1`, [
      gaps.rows[0]!.event_id,
    ]);
    expect(closed.rows[0]!.status).toBe('recovered');
    const liveMark = await store.db.query<{ plane: string; complete_through: Date; run_id: number }>(
      'SELECT plane, complete_through, run_id::int AS run_id FROM reconcile_completeness WHERE endpoint_id = $1',
      [live.endpoint_id],
    );
    expect(liveMark.rows).toHaveLength(1);
    expect(liveMark.rows[0]).toMatchObject({ plane: 'live', run_id: liveRun.ran ? liveRun.summary.run_id : -1 });
    const gapAt = sandbox.control
      .deliveries({ status: 'dead', endpointId: live.endpoint_id })
      .deliveries.map((d) => Date.parse(d.created_at));
    expect(liveMark.rows[0]!.complete_through.getTime()).toBeGreaterThan(Math.max(...gapAt));
    expect(liveRun.ran && liveRun.summary.complete_through[live.endpoint_id]).toBe(liveMark.rows[0]!.complete_through.toISOString());
  }, 60_000);
});
