import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { refreshStoreGauges } from '../../src/app/store-gauges.js';
import { createApiClient } from '../../src/client/client.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { ignoreGap } from '../../src/reconciler/gap-queries.js';
import { createReconciler } from '../../src/reconciler/reconcile.js';
import type { ReconcileOptions, ReconcileSummary } from '../../src/reconciler/types.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli } from '../support/cli.js';
import { adminUrl, openDefaultTestStore, openTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { startEndpointReceiver } from '../support/reconcile-e2e.js';

const pg = await adminUrl();

// Every type the trigger below fires is kept open by default (nothing here runs a worker that consumes them).
const CONSUMED = ['correspondence.created', 'participant.acted', 'campaign.status_changed'];

/**
 * The completeness watermark against the sandbox over real HTTP: an endpoint's receiver goes down and comes
 * back, and each reconcile run's watermark is checked against the sandbox's own delivery log.
 */
// Postgres: the CLI below opens the same database from its own connection.
describe.skipIf(!pg)('completeness watermark end to end', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let receiver: RunningServer | undefined;
  let port: number;
  let secret: string;
  let endpointId: string;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.02, 0.02], attemptTimeoutMs: 500, seed: 6501 });
    port = await freePort();
    const ep = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${port}/webhooks` });
    secret = ep.secret;
    endpointId = ep.endpoint_id;
    receiver = await startEndpointReceiver(store.db, port, secret);
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await sandbox?.close();
    await store?.cleanup();
  });

  const run = async (options: ReconcileOptions = {}): Promise<ReconcileSummary> => {
    const result = await createReconciler({
      db: store.db,
      api: createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey }),
      logger: silentLogger(),
      clock: systemClock,
      defaults: { watermarkSettleMs: 0, consumedTypes: CONSUMED },
    }).run(options);
    if (!result.ran) throw new Error('another run holds the lock');
    return result.summary;
  };
  const deliveries = (status: 'dead' | 'delivered' | 'pending') =>
    sandbox.control.deliveries({ status, endpointId, limit: 1000 }).deliveries.map((d) => ({ ...d, at: Date.parse(d.created_at) }));

  it('stops at the first dead delivery while its gap is open, then advances past it once reconcile closes it', async () => {
    sandbox.control.trigger('correspondence.created');
    await sandbox.control.waitForIdle(20_000);

    // The outage: a campaign event first (nothing can re-read it), then a file's events; all of them die.
    await receiver!.close();
    receiver = undefined;
    sandbox.control.campaignStatus({ status: 'running' });
    await new Promise((r) => setTimeout(r, 10));
    sandbox.control.trigger('correspondence.created');
    await sandbox.control.waitForIdle(20_000);
    receiver = await startEndpointReceiver(store.db, port, secret);
    sandbox.control.trigger('correspondence.created');
    await sandbox.control.waitForIdle(20_000);

    const dead = deliveries('dead').sort((a, b) => a.at - b.at);
    expect(dead.map((d) => d.event_type)).toContain('campaign.status_changed');
    const firstDead = dead[0]!;
    expect(firstDead.event_type).toBe('campaign.status_changed');

    // The file's gaps close from the re-read; the campaign's stays open and pins the watermark at its delivery.
    const first = await run();
    expect(first.gaps_open).toBe(1);
    expect(first.complete_through[endpointId]).toBe(new Date(firstDead.at).toISOString());
    for (const d of deliveries('delivered').filter((x) => x.at < firstDead.at))
      expect(Date.parse(first.complete_through[endpointId]!)).toBeGreaterThan(d.at);

    // Another run with the gap still open proves nothing further.
    const again = await run();
    expect(again.complete_through[endpointId]).toBe(first.complete_through[endpointId]);

    // Nothing consumes campaign events after all: the run closes the gap as not_consumed, and the watermark
    // moves past every delivery the sandbox made.
    const closing = await run({ consumedTypes: ['correspondence.created', 'participant.acted'] });
    expect(closing).toMatchObject({ gaps_open: 0, gaps_not_consumed: 1 });
    const through = Date.parse(closing.complete_through[endpointId]!);
    const all = [...deliveries('dead'), ...deliveries('delivered')];
    expect(through).toBeGreaterThan(Math.max(...all.map((d) => d.at)));
    const stored = await store.db.query<{ run_id: number }>(
      'SELECT run_id::int AS run_id FROM reconcile_completeness WHERE plane = $1 AND endpoint_id = $2',
      ['sandbox', endpointId],
    );
    expect(stored.rows[0]!.run_id).toBe(closing.run_id);
  }, 60_000);

  it('is kept across a restart and never moves back', async () => {
    const before = (
      await store.db.query<{ t: Date }>('SELECT complete_through AS t FROM reconcile_completeness WHERE endpoint_id = $1', [endpointId])
    ).rows[0]!.t;

    // A new process's metrics read it from the database.
    const metrics = createMetrics({ defaultMetrics: false });
    await refreshStoreGauges(metrics, store.db);
    const exposed = await metrics.registry.getSingleMetricAsString('postroom_complete_through_timestamp_seconds');
    expect(exposed).toContain(
      `postroom_complete_through_timestamp_seconds{plane="sandbox",endpoint="${endpointId}"} ${Math.floor(before.getTime() / 1000)}`,
    );

    // The CLI, a new process state with the default settle margin of a minute: what it proves now lies before the
    // stored watermark, which stays.
    const env = { DATABASE_URL: store.url!, POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey };
    const cli = await runCli(['reconcile', '--json'], env);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout).complete_through).toEqual({ [endpointId]: before.toISOString() });
    const audit = await runCli(['audit', '--since', '1h', '--json'], env);
    expect(JSON.parse(audit.stdout).complete_through).toEqual({ [endpointId]: before.toISOString() });
    const list = await runCli(['gaps', 'list'], env);
    expect(list.stdout.split('\n')[0]).toBe(`complete through ${before.toISOString()}  ${endpointId} (sandbox, proved by run 3)`);
  }, 60_000);
});

describe('completeness watermark and pending deliveries', () => {
  let store: TestStore;
  let sandbox: Sandbox;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    // The first attempt fails (nothing listens) and the next waits ten minutes: the delivery stays pending.
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [600], attemptTimeoutMs: 500, seed: 6502 });
  }, 60_000);

  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  it('a pending delivery older than the at-risk age pins the watermark at its creation', async () => {
    const ep = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${await freePort()}/webhooks` });
    sandbox.control.campaignStatus({ status: 'running' });
    for (let i = 0; i < 200; i++) {
      const pending = sandbox.control.deliveries({ status: 'pending', endpointId: ep.endpoint_id }).deliveries;
      if (pending[0] && pending[0].attempts >= 1) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const [pending] = sandbox.control.deliveries({ status: 'pending', endpointId: ep.endpoint_id }).deliveries;
    expect(pending).toBeDefined();

    const result = await createReconciler({
      db: store.db,
      api: createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey }),
      logger: silentLogger(),
      clock: systemClock,
    }).run({ atRiskAfterMs: 0, watermarkSettleMs: 0, consumedTypes: CONSUMED });
    expect(result.ran).toBe(true);
    if (!result.ran) return;
    expect(result.summary.at_risk.count).toBe(1);
    expect(result.summary.complete_through[ep.endpoint_id]).toBe(new Date(Date.parse(pending!.created_at)).toISOString());

    // The same run's at-risk count reaches the gauge every replica reads from the database.
    const metrics = createMetrics({ defaultMetrics: false });
    await refreshStoreGauges(metrics, store.db);
    expect(await metrics.registry.getSingleMetricAsString('postroom_reconcile_deliveries_at_risk')).toContain(
      'postroom_reconcile_deliveries_at_risk 1',
    );
  }, 60_000);
});

describe('completeness watermark and a delivery older than the walk overlap', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let at = Date.now();

  beforeAll(async () => {
    store = await openDefaultTestStore();
    // The sandbox stamps its records with this clock: deliveries can be made days apart.
    sandbox = await startSandbox({ allowPrivateTargets: true, seed: 6505, clock: { now: () => at } });
  }, 60_000);

  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  it('a dead delivery created after the watermark but long before the last walk still pins it', async () => {
    const day = 86_400_000;
    const now = Date.now();
    const ep = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${await freePort()}/webhooks` });
    const reconciler = createReconciler({
      db: store.db,
      api: createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey }),
      logger: silentLogger(),
      clock: systemClock,
      defaults: { watermarkSettleMs: 0, consumedTypes: CONSUMED },
    });
    const run = async (): Promise<ReconcileSummary> => {
      const r = await reconciler.run();
      if (!r.ran) throw new Error('another run holds the lock');
      return r.summary;
    };
    const seedDead = (createdAt: number): void => {
      at = createdAt;
      sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 1, status: 'dead', eventType: 'campaign.status_changed' });
    };

    // An open gap 20 days ago pins the watermark there; a later walk sees a dead delivery a day ago.
    seedDead(now - 20 * day);
    expect((await run()).complete_through[ep.endpoint_id]).toBe(new Date(now - 20 * day).toISOString());
    seedDead(now - day);
    await run();
    // A delivery from 10 days ago shows up dead only now: before the last walk less its week of overlap, but
    // after the watermark. It becomes a gap.
    seedDead(now - 10 * day);
    const third = await run();
    expect(third.gaps_found).toBe(1);

    // Once the oldest gap is closed, the watermark stops at the one from 10 days ago, not past it.
    const oldest = await store.db.query<{ gap_id: number }>(
      'SELECT gap_id::int AS gap_id FROM reconcile_gaps ORDER BY delivery_created_at LIMIT 1',
    );
    await ignoreGap(store.db, oldest.rows[0]!.gap_id, 'checked with the service');
    expect((await run()).complete_through[ep.endpoint_id]).toBe(new Date(now - 10 * day).toISOString());
  }, 60_000);
});
