import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logging/logger.js';
import { createPostroom } from '../../src/app/postroom.js';
import { RECONCILE_LOCK } from '../../src/reconciler/reconcile.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli } from '../support/cli.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';

const pg = await adminUrl();

/** Alarm hygiene, and a refused run that says who holds the lock. */
describe.skipIf(!pg)('what nothing consumes closes; what a handler consumes stays open; the lock holder is named', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let env: Record<string, string>;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    sandbox = await startSandbox({ seed: 3, allowPrivateTargets: true });
    env = { DATABASE_URL: store.url!, POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey };
  });
  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  const gapStates = async (): Promise<Array<{ event_type: string; status: string; n: number }>> =>
    (
      await store.db.query<{ event_type: string; status: string; n: number }>(
        'SELECT event_type, status, count(*)::int AS n FROM reconcile_gaps GROUP BY 1, 2 ORDER BY 1, 2',
      )
    ).rows;

  it('closes wallet and campaign gaps as not_consumed when nothing consumes them, and keeps them open once a handler does', async () => {
    const ep = await sandbox.control.registerEndpoint({ url: 'http://127.0.0.1:9/down' });
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 2, status: 'dead', eventType: 'wallet.debited' });
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 2, status: 'dead', eventType: 'campaign.status_changed' });
    const first = await runCli(['reconcile', '--endpoint', ep.endpoint_id, '--json'], env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ gaps_found: 4, gaps_not_consumed: 4, gaps_open: 0, outcome: 'clean' });
    expect(await gapStates()).toEqual([
      { event_type: 'campaign.status_changed', status: 'not_consumed', n: 2 },
      { event_type: 'wallet.debited', status: 'not_consumed', n: 2 },
    ]);
    const reasons = await store.db.query<{ reason: string }>(
      `SELECT DISTINCT reason FROM reconcile_gaps WHERE event_type = 'wallet.debited'`,
    );
    expect(reasons.rows[0]!.reason).toMatch(/^nothing consumes wallet\.debited: no handler, no forwarder and no projection effect/);

    // A worker with a wallet handler records what it consumes; from then on a missed debit is on-call's.
    const postroom = createPostroom({ db: store.db, logger: silentLogger() });
    postroom.on('wallet.debited', () => undefined);
    await postroom.drain();
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 1, status: 'dead', eventType: 'wallet.debited' });
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 1, status: 'dead', eventType: 'campaign.status_changed' });
    const second = await runCli(['reconcile', '--endpoint', ep.endpoint_id, '--json'], env);
    expect(second.code).toBe(2);
    expect(JSON.parse(second.stdout)).toMatchObject({ gaps_found: 2, gaps_not_consumed: 1, gaps_open: 1, outcome: 'gaps_open' });
    expect(await gapStates()).toEqual([
      { event_type: 'campaign.status_changed', status: 'not_consumed', n: 3 },
      { event_type: 'wallet.debited', status: 'not_consumed', n: 2 },
      { event_type: 'wallet.debited', status: 'open', n: 1 },
    ]);

    // A setting keeps a type open with no handler at all.
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 1, status: 'dead', eventType: 'campaign.status_changed' });
    const third = await runCli(['reconcile', '--endpoint', ep.endpoint_id, '--json'], {
      ...env,
      POSTROOM_RECONCILE_CONSUMED_TYPES: 'campaign.status_changed',
    });
    expect(third.code).toBe(2);
    expect(JSON.parse(third.stdout)).toMatchObject({ gaps_found: 1, gaps_not_consumed: 0, gaps_open: 2 });
    await postroom.stop(1000);
  });

  it('a refused run names the replica holding the lock and since when; --wait waits for it', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    const lock = store.db.withAdvisoryLock(RECONCILE_LOCK, async (session) => {
      await session.query(`INSERT INTO reconcile_runs (holder) VALUES ('reconciler-7f9c:41')`);
      holding();
      await released;
      await session.query(`UPDATE reconcile_runs SET outcome = 'clean', finished_at = now() WHERE holder = 'reconciler-7f9c:41'`);
    });
    await held;
    const refused = await runCli(['reconcile'], env);
    expect(refused.code).toBe(4);
    expect(refused.stdout).toMatch(/another replica is reconciling: reconciler-7f9c:41 \(run \d+\) since \d{4}-\d\d-\d\dT.*--wait/);
    const json = await runCli(['reconcile', '--json'], env);
    expect(JSON.parse(json.stdout)).toMatchObject({ ran: false, reason: 'not_leader', holder: { holder: 'reconciler-7f9c:41' } });

    setTimeout(release, 1500);
    const waited = await runCli(['reconcile', '--wait', '30s', '--json'], env);
    await lock;
    expect([0, 2]).toContain(waited.code);
    expect(JSON.parse(waited.stdout)).toMatchObject({ dry_run: false });
  });
});
