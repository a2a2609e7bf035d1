import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/client/client.js';
import { systemClock } from '../../src/clock.js';
import { createLogger, silentLogger } from '../../src/logging/logger.js';
import { runCli } from '../support/cli.js';
import { createReconciler } from '../../src/reconciler/reconcile.js';
import { rereadCandidates } from '../../src/reconciler/projection-reads.js';
import { sentLedger } from '../../src/reconciler/state-queries.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { adminUrl, openDefaultTestStore, openTestStore, type TestStore } from '../support/db.js';

const pg = await adminUrl();

describe('the sent ledger', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  beforeAll(async () => {
    store = await openDefaultTestStore();
    sandbox = await startSandbox({ seed: 1, allowPrivateTargets: true });
  });
  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  it('records what the client sends, so a re-read covers it even if its events never arrive', async () => {
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey, onCorrespondenceCreated: sentLedger(store.db) });
    const created = await client.correspondence.create({
      kind: 'letter',
      subject: 'Payslip',
      content_type: 'application/pdf',
      document_ids: [],
      recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, display_name: 'A', ref: 'emp-1' }],
    });
    expect(await rereadCandidates(store.db, null)).toContain(created.correspondence_id);
    // Recorded once however often it is reported.
    await sentLedger(store.db)(created);
    const rows = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sent_correspondence WHERE correspondence_id = $1', [
      created.correspondence_id,
    ]);
    expect(rows.rows[0]!.n).toBe(1);
    await client.close();
  });

  it('never closes a gap that no re-read explains, however many files postroom knows and re-reads', async () => {
    // A sandbox of its own: files other tests left unseen would be fair explanations for these gaps.
    const own = await startSandbox({ seed: 11, allowPrivateTargets: true });
    const client = createApiClient({ baseUrl: own.url, apiKey: own.apiKey });
    const other = await openDefaultTestStore();
    try {
      const ep = await own.control.registerEndpoint({ url: 'http://127.0.0.1:9/down' });
      own.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 5, status: 'dead', eventType: 'participant.acted' });
      const reconciler = createReconciler({ db: other.db, api: client, logger: silentLogger(), clock: systemClock });
      // A dry run reports what it would find and changes nothing.
      const dry = await reconciler.run({ endpoints: [ep.endpoint_id], dryRun: true });
      expect(dry.ran && dry.summary).toMatchObject({ dry_run: true, run_id: null, gaps_found: 5, deliveries_scanned: 5 });
      for (const table of ['reconcile_gaps', 'reconcile_runs', 'reconcile_watermarks']) {
        expect((await other.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n, table).toBe(0);
      }
      const first = await reconciler.run({ endpoints: [ep.endpoint_id] });
      expect(first.ran && first.summary).toMatchObject({
        gaps_found: 5,
        gaps_recovered: 0,
        gaps_state_synced: 0,
        gaps_open: 5,
        outcome: 'gaps_open',
      });

      // A file sent and re-read after the gaps does not explain them: its changes are not theirs.
      const recording = createApiClient({ baseUrl: own.url, apiKey: own.apiKey, onCorrespondenceCreated: sentLedger(other.db) });
      const sent = await recording.correspondence.create({
        kind: 'letter',
        subject: 's',
        content_type: 'x',
        document_ids: [],
        recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, ref: 'r' }],
      });
      const second = await reconciler.run({ endpoints: [ep.endpoint_id] });
      expect(second.ran && second.summary).toMatchObject({
        gaps_found: 0,
        gaps_recovered: 0,
        gaps_state_synced: 0,
        gaps_open: 5,
        outcome: 'gaps_open',
      });
      expect(second.ran && second.summary.correspondences_reread).toBeGreaterThanOrEqual(1);
      const gaps = await other.db.query<{ status: string; reason: string; evidence: unknown }>(
        'SELECT status, reason, evidence FROM reconcile_gaps',
      );
      for (const g of gaps.rows)
        expect(g).toMatchObject({
          status: 'open',
          evidence: null,
          reason: expect.stringMatching(/no file re-read|no file postroom knows/),
        });
      expect((await other.db.query('SELECT 1 FROM inbox WHERE correspondence_id = $1', [sent.correspondence_id])).rowCount).toBeGreaterThan(
        0,
      );
      await recording.close();
    } finally {
      await client.close();
      await other.cleanup();
      await own.close();
    }
  });
});

describe('the sent ledger never makes a caller send twice', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  beforeAll(async () => {
    store = await openDefaultTestStore();
    sandbox = await startSandbox({ seed: 2, allowPrivateTargets: true });
  });
  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });
  const input = {
    kind: 'letter',
    subject: 's',
    content_type: 'text/plain',
    document_ids: [],
    recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, ref: 'r' }],
  };

  it('retries a failing ledger write, and when it keeps failing logs the id instead of throwing after the send', async () => {
    let calls = 0;
    const flaky = createApiClient({
      baseUrl: sandbox.url,
      apiKey: sandbox.apiKey,
      sleep: async () => undefined,
      onCorrespondenceCreated: async (c) => {
        if (++calls < 3) throw new Error('ledger down');
        await sentLedger(store.db)(c);
      },
    });
    const created = await flaky.correspondence.create(input);
    expect(calls).toBe(3);
    expect(
      (await store.db.query('SELECT 1 FROM sent_correspondence WHERE correspondence_id = $1', [created.correspondence_id])).rowCount,
    ).toBe(1);

    const lines: string[] = [];
    const logger = createLogger({ level: 'error', destination: { write: (l: string) => void lines.push(l) } });
    const broken = createApiClient({
      baseUrl: sandbox.url,
      apiKey: sandbox.apiKey,
      sleep: async () => undefined,
      logger,
      onCorrespondenceCreated: () => Promise.reject(new Error('ledger down')),
    });
    const sent = await broken.correspondence.create(input);
    expect(sent.correspondence_id).toMatch(/^cor_/);
    expect(lines.join('')).toContain(sent.correspondence_id);
    expect(lines.join('')).toContain('postroom sent record');
    expect(sandbox.control.listCorrespondence().filter((c) => c.correspondence_id === sent.correspondence_id)).toHaveLength(1);
    await flaky.close();
    await broken.close();
  });

  it('records the file a plan run creates', async () => {
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey, onCorrespondenceCreated: sentLedger(store.db) });
    const run = await client.plans.run('payroll-2026-11', {});
    const id = (run.body as { correspondence_id: string }).correspondence_id;
    expect(id).toMatch(/^cor_/);
    expect((await store.db.query('SELECT 1 FROM sent_correspondence WHERE correspondence_id = $1', [id])).rowCount).toBe(1);
    await client.close();
  });

  // The CLI opens its own connection, so this needs Postgres (the in-memory test store serves one process).
  it.skipIf(!pg)('postroom sent record takes ids as arguments or one per line on stdin, and refuses what is not an id', async () => {
    const own = await openTestStore('postgres');
    const env = { DATABASE_URL: own.url! };
    try {
      const a = await runCli(['sent', 'record', 'cor_cli_1', 'cor_cli_2'], env);
      expect(a.code, a.stderr).toBe(0);
      const b = await runCli(['sent', 'record', '-', '--json'], env, 'cor_cli_3\n\ncor_cli_2\r\n');
      expect(b.code, b.stderr).toBe(0);
      expect(JSON.parse(b.stdout)).toEqual({ recorded: 2 });
      const rows = await own.db.query<{ correspondence_id: string; source: string }>(
        `SELECT correspondence_id, source FROM sent_correspondence WHERE correspondence_id LIKE 'cor_cli_%' ORDER BY 1`,
      );
      expect(rows.rows).toEqual([
        { correspondence_id: 'cor_cli_1', source: 'cli' },
        { correspondence_id: 'cor_cli_2', source: 'cli' },
        { correspondence_id: 'cor_cli_3', source: 'cli' },
      ]);
      const bad = await runCli(['sent', 'record', 'not an id'], env);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('not a correspondence id');
      const none = await runCli(['sent', 'record'], env);
      expect(none.stderr).toContain('no correspondence ids given');
    } finally {
      await own.cleanup();
    }
  });
});
