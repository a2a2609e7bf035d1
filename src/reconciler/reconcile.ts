import os from 'node:os';
import type { Clock } from '../clock.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { readConsumption } from '../worker/consumer-queries.js';
import { consumedBy } from './consumption.js';
import { CORRESPONDENCE_SCOPED_TYPES, findAtRisk, walkDeadDeliveries } from './dead-deliveries.js';
import { closeExplainedGaps } from './close-gaps.js';
import { closeNotConsumed, countOpenGaps, explainOpenGaps, openGapOutline, openGapTypes, recoverGapsReceivedLater } from './gap-queries.js';
import { rereadFiles } from './reread.js';
import { currentRun, knownEndpointIds, startRun, finishRun, type LockHolder } from './state-queries.js';
import type { ReconcileOptions, ReconcileProgress, ReconcilerApi, ReconcileSummary } from './types.js';

export interface ReconcilerDeps {
  db: Db;
  api: ReconcilerApi;
  logger: Logger;
  clock: Clock;
  metrics?: Metrics;
  /** Who this replica is, recorded on its runs so a refused one can say who holds the lock (default host:pid). */
  holder?: string;
  /** Settings every run starts from (POSTROOM_RECONCILE_*); a run's own options win. */
  defaults?: Partial<ReconcileOptions>;
  /** Waits between lock attempts with --wait (injected so tests do not wait). */
  sleep?: (ms: number) => Promise<void>;
}

export type RunResult = { ran: true; summary: ReconcileSummary } | { ran: false; reason: 'not_leader'; holder: LockHolder | undefined };

export interface Reconciler {
  /** One run, if this replica wins the lock; a run already in progress elsewhere means skip, not wait. */
  run(options?: ReconcileOptions): Promise<RunResult>;
}

export const RECONCILE_LOCK = 'reconcile';

/** The run options the configuration sets. */
export function reconcileDefaults(config: Pick<Config, 'reconcileConsumedTypes' | 'reconcileMatchWindowMs'>): Partial<ReconcileOptions> {
  return { consumedTypes: config.reconcileConsumedTypes, matchWindowMs: config.reconcileMatchWindowMs };
}

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const { db, api, logger, metrics, clock } = deps;
  const holder = deps.holder ?? `${os.hostname()}:${process.pid}`;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  async function endpointsToWalk(options: ReconcileOptions): Promise<string[]> {
    if (options.endpoints?.length) return options.endpoints;
    const known = await knownEndpointIds(db);
    if (known.length) return known;
    // Nothing recorded locally (secrets configured by hand): ask the service which endpoints exist.
    const ids: string[] = [];
    for await (const e of api.webhookEndpoints.iterate({ limit: 100 })) ids.push(e.endpoint_id);
    return ids;
  }

  async function runLocked(options: ReconcileOptions): Promise<ReconcileSummary> {
    const started = clock.now();
    const dryRun = options.dryRun ?? false;
    const runId = dryRun ? null : await startRun(db, false, holder);
    const progress: ReconcileProgress = { phase: 'dead-deliveries', pages: 0, deliveriesScanned: 0, gapsFound: 0, correspondencesReread: 0 };
    const summary: ReconcileSummary = {
      runId,
      dryRun,
      outcome: 'clean',
      endpoints: [],
      pages: 0,
      deliveriesScanned: 0,
      deliveriesSkipped: 0,
      gapsFound: 0,
      gapsRecovered: 0,
      gapsStateSynced: 0,
      gapsNotConsumed: 0,
      gapsOpen: 0,
      rereadSource: 'listing',
      atRisk: { count: 0, sample: [] },
      correspondencesReread: 0,
      rereadFailures: [],
      syntheticEventsWritten: 0,
      syntheticEventsPlanned: 0,
      durationMs: 0,
    };
    try {
      summary.endpoints = await endpointsToWalk(options);
      let earliestGap: Date | null = null;
      for (const endpointId of summary.endpoints) {
        progress.endpointId = endpointId;
        const walked = await walkDeadDeliveries(db, api, endpointId, { ...options, logger, progress });
        summary.pages += walked.pages;
        summary.deliveriesScanned += walked.scanned;
        summary.deliveriesSkipped += walked.skipped;
        summary.gapsFound += walked.gapsFound;
        if (walked.earliestGapDelivery && (!earliestGap || walked.earliestGapDelivery < earliestGap)) earliestGap = walked.earliestGapDelivery;

        progress.phase = 'at-risk';
        options.onProgress?.(progress);
        const risk = await findAtRisk(api, endpointId, new Date(clock.now() - (options.atRiskAfterMs ?? 15 * 60_000)), options.pageSize ?? 200);
        summary.atRisk.count += risk.count;
        summary.atRisk.sample.push(...risk.sample.slice(0, 20 - summary.atRisk.sample.length));
        progress.phase = 'dead-deliveries';
      }
      if (!dryRun) summary.gapsRecovered += await recoverGapsReceivedLater(db, runId);

      // Types nothing consumes close as not_consumed: an outage where nothing needed was lost ends clean.
      const isConsumed = consumedBy(await readConsumption(db), options.consumedTypes ?? []);
      if (!dryRun) summary.gapsNotConsumed += await closeNotConsumed(db, (await openGapTypes(db)).filter((t) => !isConsumed(t)), runId);

      // Pass 2: re-read every file that changed since the earliest open gap (or the last walk), and those gaps name.
      progress.phase = 're-read';
      const matchWindowMs = options.matchWindowMs ?? 120_000;
      const outline = await openGapOutline(db, CORRESPONDENCE_SCOPED_TYPES);
      // The database's clock, the one that stamped first_seen_at on the gaps: every re-read below comes after it.
      const rereadStarted = (await db.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
      const reread = await rereadFiles(
        { db, api, clock, logger },
        {
          ...options,
          dryRun,
          runId,
          matchWindowMs,
          earliestGap: [outline.earliestDelivery, earliestGap].filter((d): d is Date => d !== null).sort((a, b) => a.getTime() - b.getTime())[0] ?? null,
          namedIds: outline.correspondenceIds,
          onFile: () => {
            progress.correspondencesReread++;
            options.onProgress?.(progress);
          },
        },
      );
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      summary.rereadSource = reread.source;
      summary.correspondencesReread = reread.ok.size;
      summary.rereadFailures = reread.failures;
      summary.syntheticEventsPlanned = reread.planned;
      summary.syntheticEventsWritten = reread.written;

      if (!dryRun) {
        const closed = await closeExplainedGaps(db, { rereadIds: [...reread.ok], standing: reread.standing, seenBefore: rereadStarted, rereadAt: rereadStarted, runId });
        summary.gapsRecovered += closed.recovered;
        summary.gapsStateSynced += closed.stateSynced;
        const failed = reread.failures.length;
        await explainOpenGaps(
          db,
          CORRESPONDENCE_SCOPED_TYPES,
          failed > 0
            ? `re-read incomplete (${failed} file(s) failed); tried again on the next run`
            : reread.source === 'listing'
              ? `no file re-read in run ${runId} shows a change of this type at this delivery's time: check the event with the service, then \`postroom gaps ignore\``
              : 'the service offers no listing of changed files and no file postroom knows shows this change: record what you send (`postroom sent record`), check with the service, or ignore after checking',
        );
      }
      summary.gapsOpen = dryRun ? summary.gapsFound : await countOpenGaps(db);
      summary.outcome = summary.gapsOpen > 0 ? 'gaps_open' : 'clean';
      summary.durationMs = clock.now() - started;
      if (runId !== null) await finishRun(db, runId, summary.outcome, summary);
      metrics?.reconcileRuns.inc({ outcome: summary.outcome });
      metrics?.reconcileDuration.observe(summary.durationMs / 1000);
      if (!dryRun) {
        metrics?.reconcileGapsOpen.set(summary.gapsOpen);
        metrics?.reconcileLastSuccess.set(Math.floor(clock.now() / 1000));
      }
      logger.info({ ...summary, atRisk: summary.atRisk.count, rereadFailures: summary.rereadFailures.length }, 'reconcile run finished');
      return summary;
    } catch (err) {
      summary.outcome = 'failed';
      summary.durationMs = clock.now() - started;
      metrics?.reconcileRuns.inc({ outcome: 'failed' });
      if (runId !== null) await finishRun(db, runId, 'failed', summary, describeError(err)).catch(() => undefined);
      throw err;
    }
  }

  return {
    async run(given = {}) {
      const options: ReconcileOptions = { ...deps.defaults, ...given };
      const deadline = clock.now() + (options.waitMs ?? 0);
      for (;;) {
        const result = await db.withAdvisoryLock(RECONCILE_LOCK, () => runLocked(options), { wait: false });
        if (result.acquired) return { ran: true, summary: result.value };
        if (clock.now() >= deadline || options.signal?.aborted) {
          const held = await currentRun(db).catch(() => undefined);
          metrics?.reconcileRuns.inc({ outcome: 'skipped_not_leader' });
          logger.info({ holder: held?.holder, since: held?.started_at, run_id: held?.run_id }, 'another replica is reconciling; skipping this run');
          return { ran: false, reason: 'not_leader', holder: held };
        }
        await sleep(Math.min(1000, Math.max(10, deadline - clock.now())));
      }
    },
  };
}
