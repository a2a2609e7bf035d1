import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import { migrate } from '../../src/db/migrate.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { compareWithService, type ProjectionDifference } from '../../src/projection/compare.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { recordSentCorrespondence } from '../../src/reconciler/state-queries.js';
import { startSandbox, startTraffic, type DeliveryRecord, type Sandbox, type TrafficCounters } from '../../src/sandbox/index.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { misattribution, type RereadEvidence } from '../support/gap-evidence.js';
import { cliCommand, freePort, ROOT, spawnCli, waitForHttp, type CliProcess } from '../support/process.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { ensureFaketime, faketimeEnv, type FaketimeSetup } from './faketime.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './rr-proxy.js';

/**
 * Chaos: the sandbox sends ~5,000 events over a few hundred correspondences
 * (10% duplicates, 10% held back and overtaken) through a round-robin proxy to two
 * real `postroom serve` processes that share one Postgres through a TCP proxy.
 * Meanwhile receiver B is SIGKILLed and restarted three times, every database
 * connection is cut twice, receiver A runs with its clock 90 s ahead (libfaketime),
 * and a failure window outlasts the sandbox's retries so deliveries go dead.
 * Then `postroom reconcile --json` runs as a process and the workers drain.
 *
 * The invariants are checked and printed at the end. CHAOS_BREAK deliberately
 * breaks one thing, to prove the checks catch it (docs/reliability.md):
 *   skip-reconcile      do not run the reconciler
 *   ack-without-store   the proxy answers 200 for ~1% of events without forwarding them
 *   effect-outside-tx   the handler writes its effect outside ctx.tx (at least once)
 */
const pgUrl = await adminUrl();

const BREAK = process.env.CHAOS_BREAK ?? '';
const BREAKS = ['', 'skip-reconcile', 'ack-without-store', 'effect-outside-tx'];
const TARGET_EVENTS = Number(process.env.CHAOS_EVENTS ?? 5000);
const SEED = Number(process.env.CHAOS_SEED ?? 20261122);
const OPS_PER_SECOND = 90;
const SKEW_SECONDS = 90;
const CUT_MS = 4_000;
/** Sandbox retry waits (s): 7.75 s in all, longer than a cut (so cuts alone lose nothing), shorter than the failure window. */
const RETRY_SCHEDULE = [0.25, 0.5, 1, 2, 4];
const FAILURE_WINDOW_MS = 10_000;
const FAIL_FIRST_SHARE = 0.05;
const DRAIN_TIMEOUT_MS = 120_000;
/** A bound, not a target: at 90 operations/s the traffic takes about a minute. */
const TRAFFIC_TIMEOUT_MS = 180_000;
const FIXTURE = path.join(ROOT, 'test/chaos/fixtures/chaos-handlers.js');

/** A share of ids chosen by hash, the same in every process. */
const hashShare = (id: string, salt: string): number =>
  createHash('sha256').update(salt).update(id).digest().readUInt32BE(0) / 0x1_0000_0000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `postroom <args>` as a real process with stdout apart (for --json), bounded in time. */
function runCliProcess(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, cliCommand(args), {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`postroom ${args.join(' ')} did not finish within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function allDeliveries(sandbox: Sandbox, status?: 'dead' | 'delivered' | 'pending'): Promise<DeliveryRecord[]> {
  const out: DeliveryRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = sandbox.control.deliveries({ limit: 1000, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) });
    out.push(...page.deliveries);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out;
}

const RUNNABLE = `status IN ('received', 'processing', 'failed')`;

/** Waits (bounded) until no inbox row is runnable; returns what is still runnable if the bound is hit. */
async function drain(db: Db, timeoutMs: number): Promise<{ drained: boolean; waitedMs: number; left: string[] }> {
  const started = Date.now();
  for (;;) {
    const res = await db.query<{ event_id: string; status: string; attempts: number; last_error: string | null }>(
      `SELECT event_id, status, attempts, last_error FROM inbox WHERE ${RUNNABLE} ORDER BY event_id LIMIT 20`,
    );
    if (res.rows.length === 0) return { drained: true, waitedMs: Date.now() - started, left: [] };
    if (Date.now() - started > timeoutMs) {
      return {
        drained: false,
        waitedMs: Date.now() - started,
        left: res.rows.map((r) => `${r.event_id} ${r.status} attempts=${r.attempts} ${String(r.last_error ?? '').slice(0, 120)}`),
      };
    }
    await sleep(250);
  }
}

const median = (xs: number[]): number | undefined => {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
/**
 * Missed events no file shows (docs/worker.md): consumed here, so their gaps stay open for on-call rather than
 * close. Claim events are state-synced only when a re-read ties them to a participant's state; when several
 * files change at once that is not always possible, and then they too stay open (flagged, never lost).
 */
const UNREREADABLE = new Set(['form.response_received', 'wallet.debited', 'campaign.status_changed', 'claim.claimed', 'claim.expired']);
const sample = (xs: readonly string[], n = 25): string => `${xs.slice(0, n).join(', ')}${xs.length > n ? `, … (${xs.length} in all)` : ''}`;

describe.skipIf(!pgUrl)('chaos: kills, cut connections, a skewed clock and dead deliveries lose nothing and apply nothing twice', () => {
  let faketime: FaketimeSetup;
  let database: TestDatabase;
  let direct: Db;
  let tcp: TcpProxy;
  let sandbox: Sandbox;
  let rr: RoundRobinProxy;
  let workDir: string;
  let invocationsFile: string;
  let env: Record<string, string>;
  const ports: number[] = [];
  const receivers: Array<CliProcess | undefined> = [undefined, undefined];
  /** Output of every receiver process that ran, for a failing run's report. */
  const outputs: Array<{ name: string; proc: CliProcess }> = [];

  const receiverEnv = (i: number): Record<string, string> => ({
    ...env,
    PORT: String(ports[i]),
    ...(i === 0 ? faketimeEnv(faketime.library, SKEW_SECONDS) : {}),
  });

  /** Processes the test itself stops (SIGKILL in the script, SIGTERM at the end): any other exit is a crash. */
  const expectedExit = new Set<CliProcess>();
  const crashes: string[] = [];
  const restarting: Array<Promise<CliProcess> | undefined> = [undefined, undefined];
  let finished = false;
  const receiverName = (i: number): string => (i === 0 ? 'A' : 'B');

  function startReceiver(i: number): Promise<CliProcess> {
    const proc = spawnCli(['serve', '--role', 'all', '--no-migrate', '--handlers', FIXTURE], receiverEnv(i));
    outputs.push({
      name: `${receiverName(i)}#${outputs.filter((o) => o.name.startsWith(receiverName(i))).length + 1} (pid ${proc.child.pid})`,
      proc,
    });
    receivers[i] = proc;
    // Like an orchestrator: a receiver that dies on its own is restarted, and the crash is reported as a failure.
    void proc.exited.then(({ code, signal }) => {
      if (expectedExit.has(proc) || finished) return;
      crashes.push(
        `receiver ${receiverName(i)} (pid ${proc.child.pid}) exited on its own (code ${code}, signal ${signal}); last output:\n${proc.output().slice(-3000)}`,
      );
      const again = startReceiver(i);
      again.catch((err: Error) => crashes.push(`receiver ${receiverName(i)} could not be restarted: ${err.message.slice(0, 2000)}`));
    });
    const up = waitForHttp(`http://127.0.0.1:${ports[i]}/healthz`, proc, 60_000).then(() => proc);
    restarting[i] = up;
    return up;
  }

  beforeAll(async () => {
    if (!BREAKS.includes(BREAK))
      throw new Error(`CHAOS_BREAK: expected one of ${BREAKS.filter(Boolean).join(', ')} (or unset), got "${BREAK}"`);
    faketime = ensureFaketime();
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-chaos-'));
    invocationsFile = path.join(workDir, 'invocations.log');
    fs.writeFileSync(invocationsFile, '');

    database = await createPostgresDatabase('postroom_chaos');
    direct = createPgDb({ url: database.url, poolSize: 4, logger: silentLogger() });
    await migrate(direct);
    await direct.exec(`CREATE TABLE chaos_effects (
      event_id text PRIMARY KEY,
      type text NOT NULL,
      correspondence_id text,
      source text NOT NULL,
      attempt integer NOT NULL,
      pid integer NOT NULL,
      written_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    const u = new URL(database.url);
    tcp = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });

    sandbox = await startSandbox({
      allowPrivateTargets: true,
      seed: SEED,
      retrySchedule: RETRY_SCHEDULE,
      attemptTimeoutMs: 3_000,
      faults: { duplicateRate: 0.1, reorderRate: 0.1, reorderDelayMs: 300 },
    });
    ports.push(await freePort(), await freePort());
    rr = await startRoundRobinProxy({
      backends: ports,
      ...(BREAK === 'ack-without-store' ? { ackWithoutForwarding: (id: string) => hashShare(id, 'lie') < 0.01 } : {}),
    });
    const endpoint = await sandbox.control.registerEndpoint({ url: `${rr.url}/webhooks` });
    env = {
      DATABASE_URL: tcp.url(database.url),
      POSTROOM_WEBHOOK_SECRETS: endpoint.secret,
      POSTROOM_API_BASE_URL: sandbox.url,
      POSTROOM_API_KEY: sandbox.apiKey,
      POSTROOM_WORKER_POLL_MS: '100',
      POSTROOM_WORKER_LEASE_SECONDS: '5',
      POSTROOM_ACK_TIMEOUT_MS: '2000',
      POSTROOM_RECONCILE_CRON: '0 0 1 1 *',
      POSTROOM_SHUTDOWN_TIMEOUT_MS: '5000',
      CHAOS_INVOCATIONS_FILE: invocationsFile,
      CHAOS_FAIL_FIRST_SHARE: String(FAIL_FIRST_SHARE),
      CHAOS_BREAK: BREAK,
    };
    await Promise.all([startReceiver(0), startReceiver(1)]);
  }, 300_000);

  afterAll(async () => {
    finished = true;
    await Promise.all(
      receivers.map(async (p) => {
        if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
        expectedExit.add(p);
        p.child.kill('SIGTERM');
        const t = setTimeout(() => p.child.kill('SIGKILL'), 8_000);
        await p.exited;
        clearTimeout(t);
      }),
    );
    await rr?.close();
    await sandbox?.close();
    await direct?.close();
    await tcp?.close();
    await database?.drop();
    if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
  });

  it('every event is stored once or reconciled, every effect happens once, no 2xx without a store, every projection equals the service', async () => {
    const t0 = Date.now();
    const timeline: string[] = [];
    const mark = (what: string): void => {
      timeline.push(
        `${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s  ${String(sandbox.control.stats().events).padStart(5)} events  ${what}`,
      );
    };
    const chaos = { kills: 0, restartMs: [] as number[], cuts: 0, cutMs: [] as number[], failureWindows: 0 };

    // ---- traffic, with the chaos keyed to the number of events generated (not to time) ----
    const traffic = startTraffic({
      target: sandbox,
      seed: SEED,
      ratePerSecond: OPS_PER_SECOND,
      // Few sends and seals, many acts: a few hundred correspondences for 5,000 events. No campaign
      // events: they have nothing to re-read, so a missed one can only stay an open gap.
      mix: { send: 5, act: 40, seal: 2, withdraw: 1, campaign: 0 },
      queuedShare: 0.3,
      failureWindows: false,
      // What the organisation's backend does when it sends: record it in the ledger the reconciler re-reads.
      onCorrespondenceCreated: (id) => recordSentCorrespondence(direct, [id]),
    });
    let trafficStopped = false;
    const untilEvents = async (n: number): Promise<void> => {
      while (sandbox.control.stats().events < n && !trafficStopped) await sleep(20);
    };
    const killAndRestartB = async (): Promise<void> => {
      await restarting[1];
      const victim = receivers[1]!;
      expectedExit.add(victim);
      victim.child.kill('SIGKILL');
      await victim.exited;
      chaos.kills++;
      mark(`SIGKILL receiver B (pid ${victim.child.pid}) #${chaos.kills}`);
      const started = Date.now();
      await startReceiver(1);
      chaos.restartMs.push(Date.now() - started);
      mark(`receiver B back on port ${ports[1]} (pid ${receivers[1]!.child.pid})`);
    };
    const cutDatabase = async (): Promise<void> => {
      tcp.cut();
      chaos.cuts++;
      mark(`every database connection cut #${chaos.cuts}`);
      const started = Date.now();
      await sleep(CUT_MS);
      tcp.restore();
      chaos.cutMs.push(Date.now() - started);
      mark('database reachable again');
    };
    const at = (share: number): number => Math.round(TARGET_EVENTS * share);
    const script = (async () => {
      await untilEvents(at(0.08));
      await killAndRestartB();
      await untilEvents(at(0.18));
      await cutDatabase();
      await untilEvents(at(0.3));
      await killAndRestartB();
      await untilEvents(at(0.42));
      sandbox.control.openFailureWindow({ durationMs: FAILURE_WINDOW_MS });
      chaos.failureWindows++;
      mark(`failure window of ${FAILURE_WINDOW_MS / 1000} s opened (retries span ${RETRY_SCHEDULE.reduce((a, b) => a + b, 0)} s)`);
      await untilEvents(at(0.62));
      await cutDatabase();
      await untilEvents(at(0.74));
      await killAndRestartB();
    })();
    // Awaited after the traffic; a failure before that (a restart that never came up) must not go unhandled meanwhile.
    script.catch(() => undefined);
    mark('traffic started');
    const trafficDeadline = Date.now() + TRAFFIC_TIMEOUT_MS;
    while (sandbox.control.stats().events < TARGET_EVENTS && Date.now() < trafficDeadline) await sleep(20);
    const counters: TrafficCounters = await traffic.stop();
    trafficStopped = true;
    await script;
    tcp.restore();
    mark(`traffic stopped after ${counters.operations} operations`);

    // ---- settle: the sandbox finishes every delivery (delivered or dead), the workers drain ----
    await sandbox.control.waitForIdle(120_000);
    mark('sandbox idle: every delivery delivered or dead');
    const firstDrain = await drain(direct, DRAIN_TIMEOUT_MS);
    mark(`workers drained: ${firstDrain.drained ? 'yes' : 'NO'}`);
    const dead = await allDeliveries(sandbox, 'dead');
    const deadMissing = dead.filter((d) => d.event_type !== 'webhook.test');
    const presentBefore = new Set(
      (
        await direct.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE event_id = ANY($1::text[])', [
          deadMissing.map((d) => d.event_id),
        ])
      ).rows.map((r) => r.event_id),
    );
    const missingBeforeReconcile = deadMissing.filter((d) => !presentBefore.has(d.event_id));

    // ---- the reconciler, as a real process, then the workers drain what it wrote ----
    let reconcile: CliRun | undefined;
    let summary: Record<string, unknown> = {};
    if (BREAK !== 'skip-reconcile') {
      reconcile = await runCliProcess(['reconcile', '--json'], env);
      try {
        summary = JSON.parse(reconcile.stdout) as Record<string, unknown>;
      } catch {
        summary = {};
      }
      mark(`postroom reconcile exited ${reconcile.code}`);
    }
    const secondDrain = await drain(direct, DRAIN_TIMEOUT_MS);
    mark(`workers drained: ${secondDrain.drained ? 'yes' : 'NO'}`);
    const audit = await runCliProcess(['audit', '--since', '1h', '--json'], env);
    let auditResult: { missing_count?: number; in_window?: number; missing?: Array<{ event_id: string }> } = {};
    try {
      auditResult = JSON.parse(audit.stdout) as typeof auditResult;
    } catch {
      auditResult = {};
    }
    mark(`postroom audit exited ${audit.code}`);

    // ---- the invariants ----
    const failures: string[] = [];
    const check = (ok: boolean, message: () => string): void => {
      if (!ok) failures.push(message());
    };
    // 0. No receiver died except when the script killed it (a crash is restarted, but it is a bug).
    failures.push(...crashes);
    if (!firstDrain.drained)
      failures.push(`workers did not drain within ${DRAIN_TIMEOUT_MS} ms after the traffic: ${firstDrain.left.join('; ')}`);
    if (!secondDrain.drained)
      failures.push(`workers did not drain within ${DRAIN_TIMEOUT_MS} ms after reconcile: ${secondDrain.left.join('; ')}`);

    const generated = sandbox.control.events();
    const inbox = (
      await direct.query<{ event_id: string; source: string; status: string; attempts: number; last_error: string | null }>(
        'SELECT event_id, source, status, attempts, last_error FROM inbox',
      )
    ).rows;
    const inboxById = new Map(inbox.map((r) => [r.event_id, r]));
    const gaps = (
      await direct.query<{
        event_id: string;
        event_type: string;
        status: string;
        reason: string | null;
        evidence: RereadEvidence | null;
      }>('SELECT event_id, event_type, status, reason, evidence FROM reconcile_gaps')
    ).rows;
    const gapById = new Map(gaps.map((g) => [g.event_id, g]));

    check(
      generated.length >= TARGET_EVENTS,
      () =>
        `scenario: the traffic generated ${generated.length} events within ${TRAFFIC_TIMEOUT_MS} ms (${TARGET_EVENTS} planned; traffic errors ${counters.errors}, last ${counters.lastError ?? '-'})`,
    );

    // 1. Every generated event is in the inbox exactly once, or was reconciled with evidence, or is an open gap
    //    on-call is told of (types no file shows: a handler here consumes them, so they cannot close by themselves);
    //    the audit finds no loss.
    const twice = (
      await direct.query<{ event_id: string; n: number }>(
        'SELECT event_id, count(*)::int AS n FROM inbox GROUP BY event_id HAVING count(*) > 1',
      )
    ).rows;
    check(twice.length === 0, () => `events stored more than once: ${sample(twice.map((r) => `${r.event_id}×${r.n}`))}`);
    const stored = generated.filter((e) => inboxById.has(e.event_id));
    // Closed with evidence: recovered or state-synced from a re-read of its file, or nothing consumes its type.
    const reconciled = generated.filter(
      (e) => !inboxById.has(e.event_id) && ['recovered', 'state_synced', 'not_consumed'].includes(gapById.get(e.event_id)?.status ?? ''),
    );
    const reconciledIds = new Set(reconciled.map((e) => e.event_id));
    const flagged = generated.filter(
      (e) => !inboxById.has(e.event_id) && gapById.get(e.event_id)?.status === 'open' && UNREREADABLE.has(e.type),
    );
    const flaggedIds = new Set(flagged.map((e) => e.event_id));
    const lost = generated.filter((e) => !inboxById.has(e.event_id) && !reconciledIds.has(e.event_id) && !flaggedIds.has(e.event_id));
    check(
      lost.length === 0,
      () =>
        `events neither stored, reconciled nor flagged open (lost): ${sample(lost.map((e) => `${e.event_id} (${e.type} ${e.correspondence_id ?? ''}; gap ${gapById.get(e.event_id)?.status ?? 'none'})`))}`,
    );
    const generatedIds = new Set(generated.map((e) => e.event_id));
    const strangers = inbox.filter((r) => r.source === 'webhook' && !generatedIds.has(r.event_id));
    check(
      strangers.length === 0,
      () => `webhook events in the inbox the sandbox never generated: ${sample(strangers.map((r) => r.event_id))}`,
    );
    // A closed gap's evidence names the event's own file, or, where several re-read files fit it by type and time,
    // lists the event's own among them, or (a claim) names no file as the event's: never another file as if it
    // were the event's.
    const generatedById = new Map(generated.map((e) => [e.event_id, e]));
    const misattributed = gaps.flatMap((g) => {
      const own = generatedById.get(g.event_id)?.correspondence_id;
      const why = own ? misattribution(g, own) : null;
      return why ? [`${g.event_id} (${g.event_type}): ${why}`] : [];
    });
    check(misattributed.length === 0, () => `closed gaps whose evidence names another file than the event's own: ${sample(misattributed)}`);
    const openGaps = gaps.filter((g) => g.status === 'open');
    const wrongOpen = openGaps.filter((g) => !UNREREADABLE.has(g.event_type));
    check(
      wrongOpen.length === 0,
      () =>
        `gaps still open that a re-read should explain: ${sample(wrongOpen.map((g) => `${g.event_id} (${g.event_type}): ${g.reason ?? ''}`))}`,
    );
    check(
      audit.code === 0 && auditResult.missing_count === 0,
      () =>
        `postroom audit --since 1h: exit ${audit.code}, missing ${auditResult.missing_count ?? '?'}: ${sample((auditResult.missing ?? []).map((m) => m.event_id))}${audit.code !== 0 && audit.code !== 3 ? `\n${audit.stderr.slice(-1500)}` : ''}`,
    );
    if (reconcile) {
      const expected = openGaps.length > 0 ? 2 : 0;
      check(
        reconcile.code === expected,
        () =>
          `postroom reconcile --json exited ${reconcile!.code} (${expected} expected: ${openGaps.length} gap(s) open): ${reconcile!.stdout.slice(0, 1500)}\n${reconcile!.stderr.slice(-1500)}`,
      );
    }

    // 2. Every handler effect happened exactly once: one chaos_effects row per processed event, and nothing left unprocessed.
    const effects = (
      await direct.query<{ event_id: string; pid: number; attempt: number }>('SELECT event_id, pid, attempt FROM chaos_effects')
    ).rows;
    const effectIds = new Set(effects.map((e) => e.event_id));
    const processed = inbox.filter((r) => r.status === 'processed');
    const notProcessed = inbox.filter((r) => r.status !== 'processed');
    check(
      notProcessed.length === 0,
      () =>
        `inbox events not processed: ${sample(notProcessed.map((r) => `${r.event_id} ${r.status} attempts=${r.attempts} ${String(r.last_error ?? '').slice(0, 160)}`))}`,
    );
    const noEffect = processed.filter((r) => !effectIds.has(r.event_id));
    check(noEffect.length === 0, () => `processed events without their effect: ${sample(noEffect.map((r) => r.event_id))}`);
    const processedIds = new Set(processed.map((r) => r.event_id));
    const orphanEffects = effects.filter((e) => !processedIds.has(e.event_id));
    check(
      orphanEffects.length === 0,
      () =>
        `effects of events that are not processed (applied outside the event's transaction): ${sample(orphanEffects.map((e) => `${e.event_id} (${inboxById.get(e.event_id)?.status ?? 'not in inbox'})`))}`,
    );
    const invocationLines = fs
      .readFileSync(invocationsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\t'));
    const invocationsByEvent = new Map<string, number>();
    for (const [id] of invocationLines) invocationsByEvent.set(id!, (invocationsByEvent.get(id!) ?? 0) + 1);
    const neverInvoked = effects.filter((e) => !invocationsByEvent.has(e.event_id));
    check(neverInvoked.length === 0, () => `effects without a logged invocation: ${sample(neverInvoked.map((e) => e.event_id))}`);
    const retries = invocationLines.length - effects.length;
    // The fixture fails the first attempt of these (same hash): each must show a retry and still one effect.
    // (ctx.attempt counts claims: an event whose first claim died with its process never ran as attempt 1.)
    const ranFirstAttempt = new Set(invocationLines.filter((l) => l[1] === '1').map((l) => l[0]!));
    const injected = processed.filter((r) => hashShare(r.event_id, '') < FAIL_FIRST_SHARE && ranFirstAttempt.has(r.event_id));
    const notRetried = injected.filter((r) => (invocationsByEvent.get(r.event_id) ?? 0) < 2);
    check(
      notRetried.length === 0,
      () => `events whose first attempt was made to fail but show no retry: ${sample(notRetried.map((r) => r.event_id))}`,
    );

    // 3. No request got a 2xx for an event that is not stored (every answer the round-robin proxy passed back).
    const acked = rr.records.filter((r) => r.status >= 200 && r.status < 300);
    const ackedNotStored = [
      ...new Set(
        acked
          .filter((r) => !inboxById.has(r.eventId))
          .map((r) => `${r.eventId} (${r.backend === -1 ? 'proxy' : r.backend === 0 ? 'A' : 'B'})`),
      ),
    ];
    check(ackedNotStored.length === 0, () => `2xx answered for events that are not stored: ${sample(ackedNotStored)}`);
    const by_status = new Map<number, number>();
    for (const r of rr.records) by_status.set(r.status, (by_status.get(r.status) ?? 0) + 1);
    const oddAnswers = rr.records.filter((r) => r.backend !== -1 && r.status !== 200 && r.status !== 503);
    check(
      oddAnswers.length === 0,
      () =>
        `receiver answers other than 200 or 503 (a 401 would mean the skewed clock was refused): ${sample(oddAnswers.map((r) => `${r.eventId} ${r.status} from ${r.backend === 0 ? 'A' : 'B'}`))}`,
    );

    // 4. Every correspondence's projection equals the sandbox's state.
    const correspondence = sandbox.control.listCorrespondence();
    const diffs: ProjectionDifference[] = [];
    for (const c of correspondence) diffs.push(...compareWithService(await getProjectedCorrespondence(direct, c.correspondence_id), c));
    check(
      diffs.length === 0,
      () =>
        `projections that differ from the sandbox (${new Set(diffs.map((d) => d.correspondenceId)).size} correspondences): ${sample(
          diffs.map((d) => JSON.stringify(d)),
          15,
        )}`,
    );

    // The scenario itself must have bitten, or the run proves nothing.
    const skewA = median(rr.records.filter((r) => r.backend === 0 && r.dateSkewMs !== undefined).map((r) => r.dateSkewMs!));
    const skewB = median(rr.records.filter((r) => r.backend === 1 && r.dateSkewMs !== undefined).map((r) => r.dateSkewMs!));
    const acceptedByA = acked.filter((r) => r.backend === 0 && r.bodyStatus === 'accepted').length;
    check(
      skewA !== undefined && Math.abs(skewA / 1000 - SKEW_SECONDS) < 5,
      () => `scenario: receiver A's clock is not ${SKEW_SECONDS} s ahead (median Date skew ${skewA} ms): faketime did not take effect`,
    );
    check(acceptedByA > 0, () => 'scenario: the skewed receiver accepted no event');
    check(
      chaos.kills === 3 && chaos.cuts === 2 && chaos.failureWindows === 1,
      () => `scenario: ran ${chaos.kills} kills, ${chaos.cuts} cuts, ${chaos.failureWindows} failure windows (3, 2, 1 planned)`,
    );
    check(
      missingBeforeReconcile.length > 0,
      () => 'scenario: no dead delivery was missing from the inbox, so the reconciler had nothing to prove',
    );
    check((by_status.get(503) ?? 0) > 0, () => 'scenario: no receiver answered 503, so the database cuts were not felt');
    check(
      acked.some((r) => r.bodyStatus === 'duplicate'),
      () => 'scenario: no duplicate delivery reached a receiver',
    );
    check(retries > 0, () => 'scenario: no handler invocation was retried');

    // ---- figures ----
    const deliveries = await allDeliveries(sandbox);
    const faultLog = sandbox.control.faultLog();
    const faultCount = (f: string): number => faultLog.filter((e) => e.fault === f).length;
    const proxyErrors = new Map<string, number>();
    for (const r of rr.records) if (r.error) proxyErrors.set(r.error, (proxyErrors.get(r.error) ?? 0) + 1);
    const bySource = (s: string): number => inbox.filter((r) => r.source === s).length;
    const pids = new Set(effects.map((e) => e.pid));
    const figures: Array<[string, string | number]> = [
      ['seed / break', `${SEED} / ${BREAK || 'none'}`],
      [
        'duration',
        `${((Date.now() - t0) / 1000).toFixed(1)} s (${counters.operations} traffic operations at ${OPS_PER_SECOND}/s, ${counters.errors} refused)`,
      ],
      ['events generated (sandbox)', generated.length],
      ['correspondences', correspondence.length],
      ['deliveries / attempts', `${deliveries.length} / ${deliveries.reduce((a, d) => a + d.attempts, 0)}`],
      [
        'duplicates sent (fault) / answered duplicate',
        `${faultCount('duplicate')} / ${acked.filter((r) => r.bodyStatus === 'duplicate').length}`,
      ],
      ['held back (reordered)', faultCount('held_back')],
      ['SIGKILLs of B / restart (ms)', `${chaos.kills} / ${chaos.restartMs.join(', ')}`],
      ['database cuts (ms)', `${chaos.cuts} (${chaos.cutMs.join(', ')})`],
      [
        'clock skew A / B (median Date, s)',
        `${skewA === undefined ? '?' : (skewA / 1000).toFixed(1)} / ${skewB === undefined ? '?' : (skewB / 1000).toFixed(1)}`,
      ],
      [
        'proxy answers by status',
        [...by_status]
          .sort((a, b) => a[0] - b[0])
          .map(([s, n]) => `${s}: ${n}`)
          .join(', '),
      ],
      ['proxy 502/504 causes', [...proxyErrors].map(([e, n]) => `${e}: ${n}`).join(', ') || '-'],
      ['receiver crashes (restarted)', crashes.length],
      [
        '2xx answers checked against the inbox',
        `${acked.length} (${new Set(acked.map((r) => r.eventId)).size} events), ${ackedNotStored.length} not stored`,
      ],
      ['dead deliveries / missing from inbox', `${dead.length} / ${missingBeforeReconcile.length}`],
      ['events flagged open for on-call (no file shows them)', String(flagged.length)],
      [
        'reconcile: gaps found / recovered / state synced / not consumed / open',
        `${summary.gaps_found ?? '-'} / ${summary.gaps_recovered ?? '-'} / ${summary.gaps_state_synced ?? '-'} / ${summary.gaps_not_consumed ?? '-'} / ${summary.gaps_open ?? '-'}`,
      ],
      ['reconcile: re-read / synthetic written', `${summary.correspondences_reread ?? '-'} / ${summary.synthetic_events_written ?? '-'}`],
      ['events stored / reconciled / lost', `${stored.length} / ${reconciled.length} / ${lost.length}`],
      ['inbox rows webhook / reconciler / processed', `${bySource('webhook')} / ${bySource('reconciler')} / ${processed.length}`],
      [
        'effects / handler invocations / retries',
        `${effects.length} / ${invocationLines.length} / ${retries} (${injected.length} first attempts failed on purpose)`,
      ],
      ['events with >1 attempt / processes with effects', `${inbox.filter((r) => r.attempts > 1).length} / ${pids.size}`],
      ['audit: delivered checked / missing', `${auditResult.in_window ?? '?'} / ${auditResult.missing_count ?? '?'}`],
      ['projections compared / differing', `${correspondence.length} / ${new Set(diffs.map((d) => d.correspondenceId)).size}`],
      ['faketime', `${faketime.how} (${faketime.library})`],
    ];
    const width = Math.max(...figures.map(([k]) => k.length));
    const report = [
      '',
      'chaos timeline',
      ...timeline.map((l) => `  ${l}`),
      'chaos figures',
      ...figures.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`),
      `invariants: ${failures.length === 0 ? 'all hold' : `${failures.length} FAILED`}`,
      '',
    ].join('\n');
    console.log(report);
    fs.writeFileSync(
      path.join(os.tmpdir(), 'postroom-chaos-last.json'),
      JSON.stringify({ figures: Object.fromEntries(figures), timeline, failures, summary }, null, 2),
    );
    if (failures.length) {
      for (const { name, proc } of outputs) console.log(`--- receiver ${name}, last output:\n${proc.output().slice(-2500)}`);
    }
    expect(failures).toEqual([]);
  }, 420_000);
});
