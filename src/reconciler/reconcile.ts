import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import { insertInboxBatch } from '../inbox/insert-queries.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { CORRESPONDENCE_SCOPED_TYPES, findAtRisk, walkDeadDeliveries } from './dead-deliveries.js';
import { countOpenGaps, explainUncoveredGaps, fillCoveredGaps, fillGapsReceivedLater, openGapOutline } from './gap-queries.js';
import { mapWithConcurrency } from './pool.js';
import { getProjectedCorrespondence } from '../projection/read.js';
import { rereadCandidates } from './projection-reads.js';
import { knownEndpointIds, startRun, finishRun } from './state-queries.js';
import { diffCorrespondence, toInboxRow } from './synthetic.js';
import type { ReconcileOptions, ReconcileProgress, ReconcilerApi, ReconcileSummary } from './types.js';

export interface ReconcilerDeps {
  db: Db;
  api: ReconcilerApi;
  logger: Logger;
  clock: Clock;
  metrics?: Metrics;
}

export type RunResult = { ran: true; summary: ReconcileSummary } | { ran: false; reason: 'not_leader' };

export interface Reconciler {
  /** One run, if this replica wins the lock; a run already in progress elsewhere means skip, not wait. */
  run(options?: ReconcileOptions): Promise<RunResult>;
}

export const RECONCILE_LOCK = 'reconcile';

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const { db, api, logger, metrics, clock } = deps;

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
    const runId = dryRun ? null : await startRun(db, false);
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
      gapsFilled: 0,
      gapsOpen: 0,
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
      if (!dryRun) summary.gapsFilled += await fillGapsReceivedLater(db);

      // Pass 2: re-read what can still differ, and whatever open gaps point at.
      progress.phase = 're-read';
      const outline = dryRun ? { earliestDelivery: null, correspondenceIds: [] } : await openGapOutline(db);
      if (outline.earliestDelivery && (!earliestGap || outline.earliestDelivery < earliestGap)) earliestGap = outline.earliestDelivery;
      const candidates = new Set(await rereadCandidates(db, earliestGap ? new Date(earliestGap.getTime() - 60_000) : null));
      for (const id of outline.correspondenceIds) candidates.add(id);
      // The database's clock, the one that stamped first_seen_at on the gaps.
      const rereadStarted = (await db.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
      const ok = new Set<string>();
      await mapWithConcurrency([...candidates], options.rereadConcurrency ?? 8, async (id) => {
        if (options.signal?.aborted) return;
        try {
          const service = await api.correspondence.get(id);
          const projected = await getProjectedCorrespondence(db, id);
          const events = diffCorrespondence(service, projected, new Date(clock.now()));
          summary.syntheticEventsPlanned += events.length;
          if (!dryRun && events.length) {
            // Not `summary.x += await …`: that reads x before the await and loses concurrent re-reads' counts.
            const written = (await insertInboxBatch(db, events.map(toInboxRow))).size;
            summary.syntheticEventsWritten += written;
          }
          ok.add(id);
        } catch (err) {
          summary.rereadFailures.push({ correspondence_id: id, error: describeError(err).slice(0, 300) });
        }
        progress.correspondencesReread++;
        options.onProgress?.(progress);
      });
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      summary.correspondencesReread = ok.size;

      if (!dryRun) {
        // Without a correspondence id on the delivery, a gap is covered when every correspondence postroom
        // knows (projection and sent ledger) was re-read after it was seen. Knowing none covers nothing.
        const complete = summary.rereadFailures.length === 0 && ok.size > 0;
        summary.gapsFilled += await fillCoveredGaps(db, {
          scopedTypes: CORRESPONDENCE_SCOPED_TYPES,
          seenBefore: rereadStarted,
          rereadIds: [...ok],
          complete,
          reason: `covered by a re-read of ${ok.size} correspondence(s) in run ${runId}`,
        });
        await explainUncoveredGaps(
          db,
          CORRESPONDENCE_SCOPED_TYPES,
          rereadStarted,
          summary.rereadFailures.length > 0
            ? `re-read incomplete (${summary.rereadFailures.length} failed); retried on the next run`
            : 'postroom knows no correspondence this event could belong to: record what you send (sentLedger) or ignore after checking',
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
    async run(options = {}) {
      const result = await db.withAdvisoryLock(RECONCILE_LOCK, () => runLocked(options), { wait: false });
      if (!result.acquired) {
        metrics?.reconcileRuns.inc({ outcome: 'skipped_not_leader' });
        logger.info('another replica is reconciling; skipping this run');
        return { ran: false, reason: 'not_leader' };
      }
      return { ran: true, summary: result.value };
    },
  };
}
