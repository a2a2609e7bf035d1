import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { createApiClient, type ApiClient } from '../../src/client/client.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { compareWithService } from '../../src/projection/compare.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { sentLedger } from '../../src/reconciler/state-queries.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli } from '../support/cli.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { settle as settleWorker, startEndpointReceiver } from '../support/reconcile-e2e.js';

const pg = await adminUrl();

const keysOf = (v: unknown): string[] =>
  Array.isArray(v) ? v.flatMap(keysOf) : v && typeof v === 'object' ? Object.entries(v).flatMap(([k, x]) => [k, ...keysOf(x)]) : [];

interface GapRow {
  gap_id: number;
  event_id: string;
  event_type: string;
  status: string;
  reason: string | null;
  first_seen_at: Date;
  evidence: {
    kind?: string;
    correspondence_id?: string;
    reread_at?: string;
    attribution?: string;
    candidate_count?: number;
    candidate_correspondence_ids?: string[];
  } | null;
}

/**
 * Reconciliation through the CLI as on-call would run it: a receiver down long
 * enough for deliveries to go dead while files are created by plain HTTP and by a plan run
 * (neither through postroom's client), a queued send ends held/undeliverable and is sealed,
 * a claim code lapses on a sealed file, documents are given at creation and attached, one
 * participant acts twice, and wallet (consumed by a handler) and campaign (consumed by
 * nothing) events are missed. After `postroom reconcile` every file equals its projection on
 * every field, every closed gap carries evidence naming its own file re-read after the gap
 * was seen, the exit code is 0 exactly when nothing consumed is open, and a second run
 * writes nothing.
 */
describe.skipIf(!pg)('reconciliation proves what it claims, end to end', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let receiver: RunningServer | undefined;
  let port: number;
  let secret: string;
  let ep: string;
  let postroom: Postroom;
  let client: ApiClient;
  let env: Record<string, string>;
  const walletSeen: string[] = [];

  const startReceiver = (): Promise<RunningServer> => startEndpointReceiver(store.db, port, secret);

  /** A request as curl would send it: no postroom client, so no sent ledger. */
  const curl = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> => {
    const res = await fetch(`${sandbox.url}/sender/v2${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const nin = (last: string): { addressing: { type: string; nin: string }; ref: string; display_name: string } => ({
    addressing: { type: 'nin', nin: `1234567890${last}` },
    ref: `emp-${last}-${Math.random().toString(36).slice(2, 8)}`,
    display_name: 'R',
  });

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 8 });
    sandbox = await startSandbox({
      allowPrivateTargets: true,
      retrySchedule: [0.05, 0.1],
      attemptTimeoutMs: 500,
      queueDelayMs: 100,
      seed: 20261123,
    });
    port = await freePort();
    const endpoint = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${port}/webhooks` });
    secret = endpoint.secret;
    ep = endpoint.endpoint_id;
    receiver = await startReceiver();
    postroom = createPostroom({
      db: store.db,
      logger: silentLogger(),
      worker: { concurrency: 2, pollIntervalMs: 50, orderingHoldSeconds: 1 },
    });
    postroom.on('wallet.debited', (e) => void walletSeen.push(e.event_id));
    await postroom.start();
    client = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey, onCorrespondenceCreated: sentLedger(store.db) });
    env = { DATABASE_URL: store.url!, POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey };
  }, 120_000);

  const settle = (): Promise<void> => settleWorker(postroom, store.db);

  afterAll(async () => {
    await postroom?.stop(2000);
    await client?.close();
    await receiver?.close();
    await sandbox?.close();
    await store?.cleanup();
  });

  it('recovers what was missed, proves it per gap, and ends clean only when nothing consumed is open', async () => {
    const doc = async (name: string): Promise<string> =>
      (await client.documents.upload({ filename: name, media_type: 'text/plain', content_base64: Buffer.from(name).toString('base64') }))
        .document_id;

    // Before the outage, through postroom's client (so on the ledger): a file with a document given at creation,
    // and one addressed by claim code (held until claimed).
    const docA = await doc('a.txt');
    const a = await client.correspondence.create({
      kind: 'letter',
      subject: 'Payslip',
      content_type: 'application/pdf',
      document_ids: [docA],
      recipients: [nin('1')],
    });
    const k = await client.correspondence.create({
      kind: 'notice',
      subject: 'Claim',
      content_type: 'text/plain',
      document_ids: [],
      recipients: [{ addressing: { type: 'claim_code', name: 'Ada Lovelace' }, ref: 'claim-ref' }],
    });
    await sandbox.control.waitForIdle(20_000);
    await settle();

    // The outage: every delivery from here on goes dead.
    await receiver!.close();
    receiver = undefined;
    const docB = await doc('b.txt');
    const docLate = await doc('late.txt');
    const b = String(
      (
        await curl(
          '/correspondence',
          { kind: 'letter', subject: 'By curl', content_type: 'text/plain', document_ids: [docB], recipients: [nin('1'), nin('2')] },
          { 'x-sandbox-send-mode': 'direct' },
        )
      ).correspondence_id,
    );
    const plan = String((await curl('/plans/payroll-nov/runs', {})).correspondence_id);
    const q = String(
      (
        await curl(
          '/correspondence',
          { kind: 'letter', subject: 'Queued', content_type: 'text/plain', document_ids: [], recipients: [nin('1'), nin('8'), nin('9')] },
          { 'x-sandbox-send-mode': 'queued' },
        )
      ).correspondence_id,
    );
    await sandbox.control.waitForIdle(20_000);
    sandbox.control.seal(q);
    sandbox.control.attach(a.correspondence_id, docLate);
    const pA = a.participants[0]!.participant_id;
    sandbox.control.act(pA, 'read');
    await new Promise((r) => setTimeout(r, 5));
    sandbox.control.act(pA, 'approved');
    sandbox.control.seal(k.correspondence_id);
    const claim = sandbox.control.claims().find((c) => c.correspondence_id === k.correspondence_id)!;
    sandbox.control.expireClaim(claim.claim_id);
    sandbox.control.campaignStatus({ status: 'paused' });
    // Debits happen on the live plane only; a dead one on this endpoint is recorded as the service would list it.
    sandbox.control.seedDeliveries({ endpointId: ep, count: 1, status: 'dead', eventType: 'wallet.debited' });
    await sandbox.control.waitForIdle(20_000);

    const dead = sandbox.control.deliveries({ status: 'dead', limit: 1000 }).deliveries;
    const deadTypes = new Set(dead.map((d) => d.event_type));
    for (const t of [
      'correspondence.created',
      'participant.acted',
      'correspondence.send_completed',
      'correspondence.sealed',
      'document.attached',
      'claim.expired',
      'campaign.status_changed',
      'wallet.debited',
    ]) {
      expect(deadTypes, t).toContain(t);
    }

    receiver = await startReceiver();
    await settle();

    const first = await runCli(['reconcile', '--json'], env);
    const s1 = JSON.parse(first.stdout);
    expect(s1.reread_source).toBe('listing');
    // One casing for --json output, the service's: snake_case keys all the way down.
    expect(keysOf(s1).filter((k) => !/^[a-z0-9_]+$/.test(k))).toEqual([]);
    const audit = await runCli(['audit', '--since', '1h', '--json'], env);
    expect(keysOf(JSON.parse(audit.stdout)).filter((k) => !/^[a-z0-9_]+$/.test(k))).toEqual([]);
    const gaps = (
      await store.db.query<GapRow>(
        'SELECT gap_id::int AS gap_id, event_id, event_type, status, reason, first_seen_at, evidence FROM reconcile_gaps ORDER BY gap_id',
      )
    ).rows;
    const by_status = (st: string): GapRow[] => gaps.filter((g) => g.status === st);
    // Only the debit a handler consumes is open: it has no file to re-read. Nothing consumes the campaign event.
    expect(by_status('open').map((g) => g.event_type)).toEqual(['wallet.debited']);
    expect(by_status('not_consumed').map((g) => g.event_type)).toEqual(['campaign.status_changed']);
    expect(first.code).toBe(2);
    expect(s1).toMatchObject({ outcome: 'gaps_open', gaps_open: 1, gaps_not_consumed: 1 });

    // Every closed gap names its own file, re-read after the gap was seen. A delivery that does not name its file
    // and fits several by type and time names them all, its own among them: the one it was paired with is the
    // nearest in time, which under load can be another file's act of the same type (close-gaps.ts).
    for (const g of [...by_status('recovered'), ...by_status('state_synced')]) {
      const truth = sandbox.control.event(g.event_id).correspondence_id;
      expect(truth, g.event_id).toBeTruthy();
      expect(g.evidence?.kind, `${g.event_type} ${g.event_id}`).toBe('reread');
      if (g.evidence?.attribution === 'type_and_time' && (g.evidence.candidate_count ?? 0) > 1)
        expect(g.evidence.candidate_correspondence_ids, `${g.event_type} ${g.event_id}: ${g.reason}`).toContain(truth);
      else expect(g.evidence?.correspondence_id, `${g.event_type} ${g.event_id}: ${g.reason}`).toBe(truth);
      expect(new Date(g.evidence!.reread_at!).getTime()).toBeGreaterThanOrEqual(g.first_seen_at.getTime());
    }
    const closedFor = (cid: string): string[] =>
      gaps
        .filter((g) => g.evidence?.correspondence_id === cid)
        .map((g) => `${g.event_type}:${g.status}`)
        .sort();
    // The file made by curl and the plan run's file are found without any ledger.
    expect(closedFor(b)).toEqual(expect.arrayContaining(['correspondence.created:recovered', 'participant.acted:recovered']));
    expect(closedFor(plan)).toEqual(
      expect.arrayContaining(['correspondence.created:recovered', 'correspondence.send_completed:recovered']),
    );
    expect(closedFor(q)).toEqual(expect.arrayContaining(['correspondence.send_completed:recovered', 'correspondence.sealed:recovered']));
    expect(closedFor(k.correspondence_id)).toEqual(
      expect.arrayContaining(['claim.expired:state_synced', 'correspondence.sealed:recovered']),
    );
    // Read then approved, both dead: the approval is reproduced, the read is not (the file shows only the latest act).
    expect(closedFor(a.correspondence_id)).toEqual([
      'document.attached:recovered',
      'participant.acted:recovered',
      'participant.acted:state_synced',
    ]);

    await settle();
    for (const c of sandbox.control.listCorrespondence()) {
      expect(compareWithService(await getProjectedCorrespondence(store.db, c.correspondence_id), c), c.correspondence_id).toEqual([]);
    }
    // Handlers saw the synthetic approval as such.
    const approved = await store.db.query<{ source: string }>(
      `SELECT source FROM inbox WHERE type = 'participant.acted' AND correspondence_id = $1 AND source = 'reconciler'`,
      [a.correspondence_id],
    );
    expect(approved.rows).toHaveLength(1);

    // On-call confirms the debit with the service and closes it; the run after that is clean and writes nothing.
    const walletGap = by_status('open')[0]!;
    expect(walletGap.reason).toMatch(/no resource to re-read for wallet\.debited/);
    expect((await runCli(['gaps', 'ignore', String(walletGap.gap_id), '--reason', 'debit confirmed in the portal'], env)).code).toBe(0);
    const before = await store.db.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM inbox) + (SELECT count(*) FROM reconcile_explanations) AS n',
    );
    const gapsBefore = JSON.stringify(
      (await store.db.query('SELECT gap_id, status, reason, evidence FROM reconcile_gaps ORDER BY gap_id')).rows,
    );
    const second = await runCli(['reconcile', '--json'], env);
    expect(second.code, second.stdout).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ gaps_found: 0, gaps_open: 0, synthetic_events_written: 0, outcome: 'clean' });
    const after = await store.db.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM inbox) + (SELECT count(*) FROM reconcile_explanations) AS n',
    );
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
    expect(JSON.stringify((await store.db.query('SELECT gap_id, status, reason, evidence FROM reconcile_gaps ORDER BY gap_id')).rows)).toBe(
      gapsBefore,
    );

    const shown = await runCli(['gaps', 'show', String(by_status('recovered').find((g) => g.evidence?.kind === 'reread')!.gap_id)], env);
    expect(shown.stdout).toMatch(/evidence\s+\{.*"kind": ?"reread"/);
    expect(shown.stdout).toMatch(/"correspondence_id": ?"cor_/);
  }, 240_000);
});
