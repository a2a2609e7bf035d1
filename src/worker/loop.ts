import type { Db } from '../db/types.js';
import type { OnErrorHook } from '../events/event-error.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { claimBatch } from './claim-queries.js';
import { createClaimSizer, QUICK_EVENT_MS, type ClaimSizer } from './claim-size.js';
import type { WorkerOptions } from './options.js';
import { recordOutcomes, reportOutcomes } from './outcomes.js';
import { QUICK_LOOPS, type LoopPacing } from './pacing.js';
import { processClaimed, type BatchContext, type EventOutcome } from './process-batch.js';
import type { Reaper } from './reaping.js';
import type { Wakeups } from './wakeups.js';

/** What a worker's loops share. */
export interface LoopDeps<Api> {
  db: Db;
  workerId: string;
  options: WorkerOptions;
  logger: Logger;
  metrics: Metrics | undefined;
  onError: OnErrorHook | undefined;
  batchContext: BatchContext<Api>;
  pacing: LoopPacing;
  wakeups: Wakeups;
  reaper: Reaper;
  /** Times the batch's events (CreateWorkerOptions.stopwatch). */
  stopwatch(): number;
  isStopping(): boolean;
}

/**
 * One claim and its batch, sized by the loop's sizer; undefined when nothing
 * was runnable. `full` when the claim took as many events as it asked for.
 */
export async function runOnce<Api>(
  deps: LoopDeps<Api>,
  sizer: ClaimSizer,
): Promise<{ outcomes: EventOutcome[]; full: boolean; quick: boolean } | undefined> {
  const { pacing, metrics } = deps;
  pacing.lastClaimAt = performance.now();
  await deps.reaper.reapIfDue();
  const limit = sizer.limit;
  const claimStarted = performance.now();
  const claimed = await claimBatch(deps.db, { workerId: deps.workerId, limit, orderingHoldSeconds: deps.options.orderingHoldSeconds });
  metrics?.workerClaimDuration.observe((performance.now() - claimStarted) / 1000);
  if (!claimed) return undefined;
  const batchStarted = deps.stopwatch();
  const batch = { startedAt: batchStarted, size: claimed.events.length };
  pacing.running.add(batch);
  let outcomes: EventOutcome[];
  try {
    outcomes = await processClaimed(deps.batchContext, claimed);
  } finally {
    pacing.running.delete(batch);
  }
  const elapsedMs = deps.stopwatch() - batchStarted;
  metrics?.workerBatchDuration.observe(elapsedMs / 1000);
  const ran = outcomes.filter((o) => o.completion.attemptsDelta === 0).length;
  sizer.after({ claimed: claimed.events.length, ran, limit, elapsedMs });
  const quick = elapsedMs <= Math.max(ran, 1) * QUICK_EVENT_MS;
  pacing.lastBatchQuick = quick;
  recordOutcomes(metrics, outcomes);
  reportOutcomes(deps.onError, deps.logger, deps.options.maxAttempts, outcomes);
  return { outcomes, full: claimed.events.length >= limit, quick };
}

/** A started loop: claims and runs batches while there is work, then sleeps until woken or the poll is due. */
export async function runLoop<Api>(deps: LoopDeps<Api>, n: number): Promise<void> {
  const { pacing, wakeups } = deps;
  const sizer = createClaimSizer(deps.options.batchSize);
  let afterFullBatch = false;
  while (!deps.isStopping()) {
    let yielded = false;
    try {
      if (!afterFullBatch) await pacing.awaitClaimSpacing(deps.isStopping, wakeups.pause);
      afterFullBatch = false;
      if (deps.isStopping()) break;
      wakeups.pending = false;
      const run = runOnce(deps, sizer);
      pacing.loopRuns.add(run);
      const ran = await run.finally(() => pacing.loopRuns.delete(run));
      if (ran?.full) {
        // A full batch: there is likely more. Slow events: another loop joins this one.
        if (!ran.quick) {
          wakeups.wakeOne();
          afterFullBatch = true;
          continue;
        }
        // Quick events: QUICK_LOOPS loops are enough. If that many others run, they claim again when done.
        if (pacing.loopRuns.size < QUICK_LOOPS) {
          afterFullBatch = true;
          continue;
        }
        wakeups.pending = true;
        yielded = true;
      }
    } catch (err) {
      deps.logger.error({ err, loop: n }, 'worker loop error; retrying after the poll interval');
    }
    if (deps.isStopping()) break;
    // What arrived while this loop ran notified with every loop busy: claim it now rather than after the poll
    // (unless this loop has just left the work to another).
    if (wakeups.pending && !yielded) {
      wakeups.pending = false;
      continue;
    }
    await sleepUntilPollDue(deps);
  }
}

/**
 * The poll is the fallback for what no notification announces (a backoff that ran out, a notification
 * missed). One claim per interval finds that for every loop, and each claim that finds nothing still walks
 * the front of the claim order: a loop whose time runs out within an interval of another loop's claim sleeps
 * on until an interval has passed since it (test/worker/polling.test.ts). Nor does it claim while QUICK_LOOPS
 * loops run batches of quick events, which claim again when done, however long their batches take on a busy
 * machine (test/worker/loops.test.ts).
 */
async function sleepUntilPollDue<Api>(deps: LoopDeps<Api>): Promise<void> {
  const { pacing, wakeups } = deps;
  const { pollIntervalMs } = deps.options;
  let woken = await wakeups.sleep(pollIntervalMs);
  while (!woken && !deps.isStopping()) {
    const sinceClaim = performance.now() - pacing.lastClaimAt;
    if (sinceClaim < pollIntervalMs) woken = await wakeups.sleep(Math.max(1, pollIntervalMs - sinceClaim));
    else if (!pacing.moreLoopsWanted()) woken = await wakeups.sleep(pollIntervalMs);
    else break;
  }
}
