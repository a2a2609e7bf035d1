import { ATTR, ROOT_CONTEXT, inSpan } from '../tracing/trace.js';
import os from 'node:os';
import type { ApiClient } from '../client/client.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { seriesOf, type Metrics, type PostroomMetrics } from '../metrics/metrics.js';
import { readConsumption } from '../worker/consumer-queries.js';
import { consumedBy } from './consumption.js';
import { RECONCILE_DEFAULTS } from './defaults.js';
import { CORRESPONDENCE_SCOPED_TYPES, findAtRisk, walkDeadDeliveries } from './dead-deliveries.js';
import { closeExplainedGaps } from './close-gaps.js';
import { closeNotConsumed, countOpenGaps, explainOpenGaps, openGapOutline, openGapTypes, recoverGapsReceivedLater } from './gap-queries.js';
import { proveCompleteness, type EndpointEvidence } from './completeness.js';
import { completenessOf } from './completeness-queries.js';
import type { GapScope } from './gap-queries.js';
import { rereadFiles } from './reread.js';
import { currentRun, knownEndpointIds, startRun, finishRun } from './state-queries.js';
import type { ReconcileOptions, ReconcileProgress, ReconcileSummary } from './types.js';

export interface ReconcilerDeps {
  db: Db;
  api: ApiClient;
  logger: Logger;
  /** Milliseconds since the epoch; injected so tests can move it. */
  clock: { now(): number };
  metrics?: PostroomMetrics;
  /** Who this replica is, recorded on its runs so a refused one can say who holds the lock (default host:pid). */
  holder?: string;
  /** Settings every run starts from (POSTROOM_RECONCILE_*); a run's own options win. */
  defaults?: Partial<ReconcileOptions>;
  /** Waits between lock attempts with --wait (injected so tests do not wait). */
  sleep?: (ms: number) => Promise<void>;
}

/** A run, or why there was none: another replica holds the lock (`holder`: its run, when it recorded itself). */
export type RunResult =
  | { ran: true; summary: ReconcileSummary }
  | { ran: false; reason: 'not_leader'; holder: { run_id: number; holder: string | null; started_at: Date } | undefined };

export interface Reconciler {
  /** One run, if this replica wins the lock; a run already in progress elsewhere means skip, not wait. */
  run(options?: ReconcileOptions): Promise<RunResult>;
}

export const RECONCILE_LOCK = 'reconcile';

/** What a run works with: the deps, with the series behind the metrics handle. */
type RunDeps = Omit<ReconcilerDeps, 'metrics'> & { metrics: Metrics | undefined };

/** The run options the configuration sets. */
export function reconcileDefaults(config: Pick<Config, 'reconcileConsumedTypes' | 'reconcileMatchWindowMs'>): Partial<ReconcileOptions> {
  return { consumedTypes: config.reconcileConsumedTypes, matchWindowMs: config.reconcileMatchWindowMs };
}

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const inner: RunDeps = { ...deps, metrics: deps.metrics && seriesOf(deps.metrics) };
  const { db, logger, metrics, clock } = inner;
  const holder = deps.holder ?? `${os.hostname()}:${process.pid}`;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  return {
    async run(given = {}) {
      const options: ReconcileOptions = { ...deps.defaults, ...given };
      const deadline = clock.now() + (options.waitMs ?? 0);
      for (;;) {
        const result = await db.withAdvisoryLock(RECONCILE_LOCK, () => tracedRun(inner, holder, options), { wait: false });
        if (result.acquired) return { ran: true, summary: result.value };
        if (clock.now() >= deadline || options.signal?.aborted) {
          const held = await currentRun(db).catch(() => undefined);
          metrics?.reconcileRuns.inc({ outcome: 'skipped_not_leader' });
          logger.info(
            { holder: held?.holder, since: held?.started_at, run_id: held?.run_id },
            'another replica is reconciling; skipping this run',
          );
          return { ran: false, reason: 'not_leader', holder: held };
        }
        await sleep(Math.min(1000, Math.max(10, deadline - clock.now())));
      }
    },
  };
}

/** A run in a span of its own: its re-reads, API calls and the synthetic events it writes are in its trace. */
function tracedRun(deps: RunDeps, holder: string, options: ReconcileOptions): Promise<ReconcileSummary> {
  return inSpan(
    'postroom.reconcile',
    { attributes: { 'postroom.reconcile.dry_run': options.dryRun ?? false } },
    ROOT_CONTEXT,
    async (span) => {
      const summary = await runLocked(deps, holder, options);
      if (span.isRecording()) {
        span.setAttributes({
          [ATTR.outcome]: summary.outcome,
          'postroom.reconcile.gaps_found': summary.gaps_found,
          'postroom.reconcile.gaps_open': summary.gaps_open,
          'postroom.reconcile.correspondences_reread': summary.correspondences_reread,
          'postroom.reconcile.synthetic_written': summary.synthetic_events_written,
        });
        if (summary.run_id !== null) span.setAttribute('postroom.reconcile.run_id', String(summary.run_id));
      }
      return summary;
    },
  );
}

/** One run, under the lock: both passes, then the summary recorded and reported. */
async function runLocked(deps: RunDeps, holder: string, options: ReconcileOptions): Promise<ReconcileSummary> {
  const { db, logger, metrics, clock } = deps;
  const started = clock.now();
  const dryRun = options.dryRun ?? false;
  const runId = dryRun ? null : await startRun(db, false, holder);
  const summary = emptySummary(runId, dryRun);
  const progress: ReconcileProgress = {
    phase: 'dead-deliveries',
    pages: 0,
    deliveries_scanned: 0,
    gaps_found: 0,
    correspondences_reread: 0,
  };
  const plane = deps.api.plane ?? 'default';
  try {
    summary.endpoints = await endpointsToWalk(deps, options, plane);
    const { earliestGap, evidence } = await walkEndpoints(deps, options, summary, progress, plane);
    if (!dryRun) summary.gaps_recovered += await recoverGapsReceivedLater(db, runId);

    // Types nothing consumes close as not_consumed: an outage where nothing needed was lost ends clean.
    const isConsumed = consumedBy(await readConsumption(db), options.consumedTypes ?? []);
    if (!dryRun)
      summary.gaps_not_consumed += await closeNotConsumed(
        db,
        (await openGapTypes(db)).filter((t) => !isConsumed(t)),
        runId,
      );

    await rereadAndClose(deps, options, summary, progress, earliestGap, { plane, endpoints: summary.endpoints });
    summary.complete_through = await completeThrough(deps, { plane, runId, dryRun, evidence, since: options.since });
    summary.gaps_open = dryRun ? summary.gaps_found : await countOpenGaps(db);
    summary.outcome = summary.gaps_open > 0 ? 'gaps_open' : 'clean';
    summary.duration_ms = clock.now() - started;
    if (runId !== null) await finishRun(db, runId, summary.outcome, summary);
    metrics?.reconcileRuns.inc({ outcome: summary.outcome });
    metrics?.reconcileDuration.observe(summary.duration_ms / 1000);
    if (!dryRun) {
      for (const [endpoint, through] of Object.entries(summary.complete_through))
        if (through) metrics?.completeThrough.set({ plane, endpoint }, Math.floor(Date.parse(through) / 1000));
      metrics?.reconcileGapsOpen.set(summary.gaps_open);
      metrics?.reconcileLastSuccess.set(Math.floor(clock.now() / 1000));
    }
    logger.info({ ...summary, at_risk: summary.at_risk.count, reread_failures: summary.reread_failures.length }, 'reconcile run finished');
    return summary;
  } catch (err) {
    summary.outcome = 'failed';
    summary.duration_ms = clock.now() - started;
    metrics?.reconcileRuns.inc({ outcome: 'failed' });
    if (runId !== null) await finishRun(db, runId, 'failed', summary, describeError(err)).catch(() => undefined);
    throw err;
  }
}

function emptySummary(runId: number | null, dryRun: boolean): ReconcileSummary {
  return {
    run_id: runId,
    dry_run: dryRun,
    outcome: 'clean',
    endpoints: [],
    pages: 0,
    deliveries_scanned: 0,
    deliveries_skipped: 0,
    gaps_found: 0,
    gaps_recovered: 0,
    gaps_state_synced: 0,
    gaps_not_consumed: 0,
    gaps_open: 0,
    reread_source: 'listing',
    at_risk: { count: 0, sample: [] },
    complete_through: {},
    correspondences_reread: 0,
    reread_failures: [],
    synthetic_events_written: 0,
    synthetic_events_planned: 0,
    duration_ms: 0,
  };
}

async function endpointsToWalk(deps: RunDeps, options: ReconcileOptions, plane: string): Promise<string[]> {
  if (options.endpoints?.length) return options.endpoints;
  const known = await knownEndpointIds(deps.db, plane);
  if (known.length) return known;
  // Nothing recorded locally (secrets configured by hand): ask the service which endpoints exist.
  const ids: string[] = [];
  for await (const e of deps.api.webhookEndpoints.iterate({ limit: 100 })) ids.push(e.endpoint_id);
  return ids;
}

/**
 * The watermark of each endpoint walked: proved and stored from this run's evidence, or (a dry run, which
 * records no gap) the stored one.
 */
async function completeThrough(
  deps: RunDeps,
  p: { plane: string; runId: number | null; dryRun: boolean; evidence: EndpointEvidence[]; since: Date | undefined },
): Promise<Record<string, string | null>> {
  const planeEndpoints = new Set<string>();
  if (!p.dryRun) for await (const e of deps.api.webhookEndpoints.iterate({ limit: 100 })) planeEndpoints.add(e.endpoint_id);
  return proveCompleteness(deps.db, { plane: p.plane, runId: p.runId, evidence: p.evidence, planeEndpoints, since: p.since });
}

/**
 * Pass 1, endpoint by endpoint: pending deliveries are counted at risk, then dead ones become gaps (pending
 * first: what leaves pending during the walk is then dead or delivered for good, which the watermark relies on).
 * The earliest gap's delivery time, and what each endpoint's walk proves for the watermark.
 */
async function walkEndpoints(
  deps: RunDeps,
  options: ReconcileOptions,
  summary: ReconcileSummary,
  progress: ReconcileProgress,
  plane: string,
): Promise<{ earliestGap: Date | null; evidence: EndpointEvidence[] }> {
  const { db, api, logger, clock } = deps;
  let earliestGap: Date | null = null;
  const evidence: EndpointEvidence[] = [];
  for (const endpointId of summary.endpoints) {
    progress.endpointId = endpointId;
    progress.phase = 'at-risk';
    options.onProgress?.(progress);
    const horizon = new Date(clock.now() - (options.watermarkSettleMs ?? RECONCILE_DEFAULTS.watermarkSettleMs));
    const risk = await findAtRisk(
      api,
      endpointId,
      new Date(clock.now() - (options.atRiskAfterMs ?? RECONCILE_DEFAULTS.atRiskAfterMs)),
      options.pageSize ?? RECONCILE_DEFAULTS.pageSize,
      db,
    );
    summary.at_risk.count += risk.count;
    summary.at_risk.sample.push(...risk.sample.slice(0, 20 - summary.at_risk.sample.length));
    evidence.push({ endpointId, horizon, pendingPin: risk.pin });

    progress.phase = 'dead-deliveries';
    const examineFrom = (await completenessOf(db, plane, [endpointId])).get(endpointId)?.complete_through ?? null;
    const walked = await walkDeadDeliveries(db, api, endpointId, { ...options, logger, progress, plane, examineFrom });
    summary.pages += walked.pages;
    summary.deliveries_scanned += walked.scanned;
    summary.deliveries_skipped += walked.skipped;
    summary.gaps_found += walked.gaps_found;
    if (walked.earliestGapDelivery && (!earliestGap || walked.earliestGapDelivery < earliestGap)) earliestGap = walked.earliestGapDelivery;
  }
  return { earliestGap, evidence };
}

/**
 * Pass 2: re-read every file that changed since the earliest open gap (or the last walk), and those gaps name,
 * then close the gaps the re-reads explain and give the others their reason.
 */
async function rereadAndClose(
  deps: RunDeps,
  options: ReconcileOptions,
  summary: ReconcileSummary,
  progress: ReconcileProgress,
  earliestGap: Date | null,
  scope: GapScope,
): Promise<void> {
  const { db, api, clock, logger } = deps;
  const dryRun = summary.dry_run;
  const runId = summary.run_id;
  progress.phase = 're-read';
  const matchWindowMs = options.matchWindowMs ?? RECONCILE_DEFAULTS.matchWindowMs;
  const outline = await openGapOutline(db, CORRESPONDENCE_SCOPED_TYPES, scope);
  // The database's clock, the one that stamped first_seen_at on the gaps: every re-read below comes after it.
  const rereadStarted = (await db.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
  const reread = await rereadFiles(
    { db, api, clock, logger },
    {
      ...options,
      dryRun,
      runId,
      matchWindowMs,
      earliestGap:
        [outline.earliestDelivery, earliestGap].filter((d): d is Date => d !== null).sort((a, b) => a.getTime() - b.getTime())[0] ?? null,
      namedIds: outline.correspondenceIds,
      onFile: () => {
        progress.correspondences_reread++;
        options.onProgress?.(progress);
      },
    },
  );
  if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
  summary.reread_source = reread.source;
  summary.correspondences_reread = reread.ok.size;
  summary.reread_failures = reread.failures;
  summary.synthetic_events_planned = reread.planned;
  summary.synthetic_events_written = reread.written;
  if (dryRun) return;

  const closed = await closeExplainedGaps(db, {
    rereadIds: [...reread.ok],
    standing: reread.standing,
    seenBefore: rereadStarted,
    rereadAt: rereadStarted,
    runId,
    source: reread.source,
    failedCount: reread.failures.length,
    scope,
  });
  summary.gaps_recovered += closed.recovered;
  summary.gaps_state_synced += closed.stateSynced;
  const failed = reread.failures.length;
  await explainOpenGaps(
    db,
    CORRESPONDENCE_SCOPED_TYPES,
    failed > 0
      ? `re-read incomplete (${failed} file(s) failed); tried again on the next run`
      : reread.source === 'listing'
        ? `no file re-read in run ${runId} shows a change of this type at this delivery's time: check the event with the service, then \`postroom gaps ignore\``
        : 'the service offers no listing of changed files and no file postroom knows shows this change: record what you send (`postroom sent record`), check with the service, or ignore after checking',
    undefined,
    scope,
  );
}
