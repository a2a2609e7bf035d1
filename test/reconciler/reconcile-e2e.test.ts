import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { createApiClient } from '../../src/client/client.js';
import { systemClock } from '../../src/clock.js';
import { createPgDb } from '../../src/db/pg.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { compareWithService, type ServiceCorrespondence } from '../../src/projection/compare.js';
import { createReconciler } from '../../src/reconciler/reconcile.js';
import { recordSentCorrespondence } from '../../src/reconciler/state-queries.js';
import { startSandbox, startTraffic, type Sandbox } from '../../src/sandbox/index.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { runCli } from '../support/cli.js';
import { freePort } from '../support/process.js';
import { misattribution, type RereadEvidence } from '../support/gap-evidence.js';
import { startEndpointReceiver } from '../support/reconcile-e2e.js';

const pg = await adminUrl();

async function allDeliveries(sandbox: Sandbox, status: 'dead' | 'delivered' | 'pending', endpointId?: string) {
  const out = [];
  let cursor: string | undefined;
  do {
    const page = sandbox.control.deliveries({ status, limit: 1000, ...(endpointId ? { endpointId } : {}), ...(cursor ? { cursor } : {}) });
    out.push(...page.deliveries);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out;
}

/**
 * End to end: the sandbox sends ~2,000 events to two endpoints on one
 * postroom store; one endpoint's receiver is down long enough for deliveries to go
 * dead; `postroom reconcile` must then leave nothing missing.
 */
describe.skipIf(!pg)('reconcile end to end with the sandbox', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let a: RunningServer | undefined;
  let b: RunningServer;
  let portA: number;
  let postroom: Postroom;
  let env: Record<string, string>;
  let secretA: string;

  const startA = (): Promise<RunningServer> => startEndpointReceiver(store.db, portA, secretA);

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 8 });
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.05, 0.1, 0.2], attemptTimeoutMs: 1000, seed: 20261122 });
    portA = await freePort();
    const portB = await freePort();
    const epA = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${portA}/webhooks` });
    // The second endpoint hears only the file lifecycle: some events missed at A reach postroom through it.
    const epB = await sandbox.control.registerEndpoint({
      url: `http://127.0.0.1:${portB}/webhooks`,
      events: ['correspondence.sealed', 'correspondence.withdrawn'],
    });
    secretA = epA.secret;
    a = await startA();
    b = await startEndpointReceiver(store.db, portB, epB.secret);
    postroom = createPostroom({
      db: store.db,
      logger: silentLogger(),
      worker: { concurrency: 2, pollIntervalMs: 50, orderingHoldSeconds: 5 },
    });
    await postroom.start();
    env = { DATABASE_URL: store.url!, POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey };
  }, 120_000);

  afterAll(async () => {
    await postroom?.stop(2000);
    await a?.close();
    await b?.close();
    await sandbox?.close();
    await store?.cleanup();
  });

  it('loses nothing: after reconcile every correspondence matches, every dead delivery is in the inbox or a gap closed with evidence, and a second run finds nothing new', async () => {
    const traffic = startTraffic({
      target: sandbox,
      seed: 7,
      ratePerSecond: 400,
      queuedShare: 0.3,
      failureWindows: false,
      onCorrespondenceCreated: (id) => recordSentCorrespondence(store.db, [id]),
    });
    // Take receiver A down for a window longer than the whole retry schedule, mid-run.
    while (sandbox.control.stats().events < 600) await new Promise((r) => setTimeout(r, 20));
    await a!.close();
    a = undefined;
    await new Promise((r) => setTimeout(r, 2500));
    a = await startA();
    while (sandbox.control.stats().events < 2000) await new Promise((r) => setTimeout(r, 20));
    await traffic.stop();
    await sandbox.control.waitForIdle(30_000);
    await postroom.drain();

    const dead = await allDeliveries(sandbox, 'dead');
    expect(dead.length).toBeGreaterThan(20);
    const before = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [
      dead.map((d) => d.event_id),
    ]);
    expect(before.rows[0]!.n).toBeLessThan(dead.length);

    const first = await runCli(['reconcile', '--json'], env);
    expect(first.stderr).toContain('plane: sandbox');
    const s1 = JSON.parse(first.stdout);
    expect(s1.gaps_found).toBeGreaterThan(0);
    expect(s1.synthetic_events_written).toBeGreaterThan(0);
    const written = await store.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbox WHERE source = 'reconciler'`);
    expect(written.rows[0]!.n).toBe(s1.synthetic_events_written);
    await postroom.drain();

    for (const c of sandbox.control.listCorrespondence()) {
      const diff = compareWithService(await getProjectedCorrespondence(store.db, c.correspondence_id), c);
      expect(diff, c.correspondence_id).toEqual([]);
    }
    // Each file the run re-read keeps the service's answer, with the run that read it (the console's timeline).
    const stored = await store.db.query<{ correspondence_id: string; run_id: number; file: ServiceCorrespondence }>(
      'SELECT correspondence_id, run_id::int AS run_id, file FROM correspondence_service_state',
    );
    expect(stored.rows.length).toBe(s1.correspondences_reread);
    expect(stored.rows.length).toBeGreaterThan(0);
    for (const row of stored.rows) {
      expect(row.run_id).toBe(s1.run_id);
      const own = sandbox.control.listCorrespondence().find((c) => c.correspondence_id === row.correspondence_id)!;
      expect(
        compareWithService(await getProjectedCorrespondence(store.db, row.correspondence_id), row.file),
        row.correspondence_id,
      ).toEqual(compareWithService(await getProjectedCorrespondence(store.db, row.correspondence_id), own));
    }
    const gaps = await store.db.query<{
      gap_id: number;
      event_id: string;
      event_type: string;
      status: string;
      reason: string | null;
      evidence: unknown;
    }>('SELECT gap_id::int AS gap_id, event_id, event_type, status, reason, evidence FROM reconcile_gaps');
    const gapByEvent = new Map(gaps.rows.map((g) => [g.event_id, g]));
    const inInbox = new Set(
      (
        await store.db.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE event_id = ANY($1::text[])', [
          dead.map((d) => d.event_id),
        ])
      ).rows.map((r) => r.event_id),
    );
    // Nothing here consumes campaign or form events (no handler, no forwarder): those close as not_consumed.
    // Every other dead event is in the inbox or closed with evidence; none is open.
    // Claim events can only be state-synced, and only when a re-read ties them to a participant's state; one that
    // cannot be tied stays open for on-call (flagged, never lost). Every other gap closes.
    const open = gaps.rows.filter((g) => g.status === 'open');
    expect(open.filter((g) => !g.event_type.startsWith('claim.')).map((g) => `${g.event_type}: ${g.reason}`)).toEqual([]);
    expect(first.code).toBe(open.length > 0 ? 2 : 0);
    expect(s1).toMatchObject({ gaps_open: open.length, outcome: open.length > 0 ? 'gaps_open' : 'clean' });
    for (const d of dead) {
      if (d.event_type === 'webhook.test') continue;
      const status = gapByEvent.get(d.event_id)?.status;
      const expected = ['campaign.status_changed', 'form.response_received'].includes(d.event_type)
        ? ['not_consumed']
        : d.event_type.startsWith('claim.')
          ? ['recovered', 'state_synced', 'open']
          : ['recovered', 'state_synced'];
      expect(inInbox.has(d.event_id) || expected.includes(status ?? ''), `${d.event_id} (${d.event_type}): ${status}`).toBe(true);
    }

    // Evidence says only what it knows. The delivery listing does not name an event's file, so a gap is paired with a
    // re-read by type and time. Where the evidence names one file as the event's own, the sandbox must agree; where
    // several files fit, the event's own must be among those it lists. 400 operations a second give many same-type
    // changes in one window, so both cases occur here.
    const attributions = new Map<string, number>();
    for (const g of gaps.rows) {
      const attribution = (g.evidence as RereadEvidence | null)?.attribution;
      if (attribution) attributions.set(attribution, (attributions.get(attribution) ?? 0) + 1);
      // An event of no file (a wallet or campaign event) closed from a re-read would be named as '(none)'.
      const own = sandbox.control.event(g.event_id).correspondence_id ?? '(none)';
      expect(misattribution(g, own), `${g.event_id}: ${g.reason}`).toBeNull();
    }
    expect(attributions.get('only_fitting_file') ?? 0).toBeGreaterThan(0);
    expect(attributions.get('type_and_time') ?? 0).toBeGreaterThan(0);

    // On-call checks what stayed open and closes it; the next run is clean and writes nothing.
    for (const g of open)
      expect((await runCli(['gaps', 'ignore', String(g.gap_id), '--reason', 'claim checked in the portal'], env)).code).toBe(0);
    const second = await runCli(['reconcile', '--json'], env);
    const s2 = JSON.parse(second.stdout);
    expect(second.code).toBe(0);
    expect(s2).toMatchObject({ gaps_found: 0, synthetic_events_written: 0, gaps_open: 0 });
    expect(s2.deliveries_scanned).toBe(s1.deliveries_scanned);

    // What on-call did with the CLI is in the same audit as the console's actions.
    const actions = await store.db.query<{ action: string; via: string; affected: number | null; detail: { outcome?: string } }>(
      `SELECT action, via, affected, detail FROM console_audit ORDER BY audit_id`,
    );
    expect(actions.rows.filter((r) => r.action === 'ignore_gap').length).toBe(open.length);
    const runs = actions.rows.filter((r) => r.action === 'reconcile');
    expect(runs.map((r) => r.detail.outcome)).toEqual([s1.outcome, s2.outcome]);
    expect(runs.map((r) => r.affected)).toEqual([s1.gaps_found, 0]);
    expect(new Set(actions.rows.map((r) => r.via))).toEqual(new Set(['cli']));

    const audit = await runCli(['audit', '--since', '1h', '--json'], env);
    expect(audit.code, audit.stdout).toBe(0);
    expect(JSON.parse(audit.stdout).missing_count).toBe(0);
  }, 240_000);

  it('two replicas started together reconcile once', async () => {
    const dbs: Db[] = [
      createPgDb({ url: store.url!, poolSize: 3, logger: silentLogger() }),
      createPgDb({ url: store.url!, poolSize: 3, logger: silentLogger() }),
    ];
    try {
      const results = await Promise.all(
        dbs.map((db) =>
          createReconciler({
            db,
            api: createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey }),
            logger: silentLogger(),
            clock: systemClock,
          }).run(),
        ),
      );
      expect(results.filter((r) => r.ran)).toHaveLength(1);
      // The holder may not have recorded its run yet when the other asks (consumers-and-lock.test.ts shows it named).
      expect(results.filter((r) => !r.ran)).toEqual([expect.objectContaining({ ran: false, reason: 'not_leader' })]);
    } finally {
      for (const db of dbs) await db.close();
    }
  });

  it('a run killed half way resumes from its watermark', async () => {
    const api = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey });
    const ep = await sandbox.control.registerEndpoint({ url: 'http://127.0.0.1:9/never' });
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 1000, status: 'dead', eventType: 'participant.acted' });
    const reconciler = createReconciler({ db: store.db, api, logger: silentLogger(), clock: systemClock });
    const abort = new AbortController();
    await expect(
      reconciler.run({
        endpoints: [ep.endpoint_id],
        pageSize: 100,
        signal: abort.signal,
        onProgress: (p) => p.pages >= 4 && abort.abort(new Error('killed')),
      }),
    ).rejects.toThrow('killed');
    const mid = await store.db.query<{ resume_cursor: string | null; watermark: Date | null }>(
      'SELECT resume_cursor, watermark FROM reconcile_watermarks WHERE endpoint_id = $1',
      [ep.endpoint_id],
    );
    expect(mid.rows[0]!.resume_cursor).not.toBeNull();
    expect(mid.rows[0]!.watermark).toBeNull();
    const gapsMid = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM reconcile_gaps WHERE endpoint_id = $1', [
      ep.endpoint_id,
    ]);
    expect(gapsMid.rows[0]!.n).toBe(400);

    const resumed = await reconciler.run({ endpoints: [ep.endpoint_id], pageSize: 100 });
    expect(resumed.ran && resumed.summary.pages).toBe(6);
    expect(resumed.ran && resumed.summary.gaps_found).toBe(600);
    const after = await store.db.query<{ resume_cursor: string | null; watermark: Date | null }>(
      'SELECT resume_cursor, watermark FROM reconcile_watermarks WHERE endpoint_id = $1',
      [ep.endpoint_id],
    );
    expect(after.rows[0]).toMatchObject({ resume_cursor: null });
    expect(after.rows[0]!.watermark).not.toBeNull();
    const runs = await store.db.query<{ outcome: string }>(`SELECT outcome FROM reconcile_runs ORDER BY run_id DESC LIMIT 2`);
    // The aborted run is recorded as failed; the resumed one completed.
    expect(runs.rows[1]!.outcome).toBe('failed');
    expect(['clean', 'gaps_open']).toContain(runs.rows[0]!.outcome);
    await api.close();
  });
});
