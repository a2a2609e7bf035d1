import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Component } from '../lifecycle/component.js';
import type { Db } from '../db/types.js';
import type { HandlerRegistry } from '../events/registry.js';
import { INBOX_CHANNEL } from '../inbox/types.js';
import type { Logger } from '../logging/logger.js';
import { eventTypeLabel } from '../metrics/labels.js';
import type { Metrics } from '../metrics/metrics.js';
import { EventError, reportEventError, type OnErrorHook } from '../events/event-error.js';
import { claimBatch, reapExpiredLeases, reapOrphanedAttempts } from './claim-queries.js';
import { createClaimSizer, QUICK_EVENT_MS, type ClaimSizer } from './claim-size.js';
import { DEFAULT_WORKER_OPTIONS, type WorkerOptions } from './options.js';
import { processClaimed, type BatchContext, type EventOutcome } from './process-batch.js';

/** The shortest spacing of claims woken by notifications (see onNotification), and of any claim not following a full batch (see loop). */
const WAKE_COALESCE_MS = 50;

/**
 * How many loops claim side by side while events are quick. More only walked the claim order past each other's
 * batches and contended for Postgres; one alone left Postgres idle while Node ran its batch (a drain of a backlog
 * 0.80 times as fast as four loops). Two: a drain 1.06 times as fast as four, and `serve`'s ingest p99 lower; its
 * rate gained in 10 s runs but not over 25 s (docs/benchmarks.md, "Stop 44").
 */
const QUICK_LOOPS = 2;

export interface CreateWorkerOptions<Api = unknown> {
  db: Db;
  registry: HandlerRegistry<Api>;
  logger: Logger;
  metrics?: Metrics | undefined;
  api?: Api;
  options?: Partial<WorkerOptions>;
  /** Shows in inbox_attempts.worker_id and in the error of an event reaped from it; defaults to host:pid:random. */
  workerId?: string;
  /** For jitter; injected by tests. */
  random?: () => number;
  /** Told of every handler failure, dead event and quarantined event, once its outcome is committed. */
  onError?: OnErrorHook | undefined;
}

export interface DrainResult {
  /** Events whose transaction committed, by the status they reached. */
  by_status: Record<string, number>;
  batches: number;
}

export interface Worker extends Component {
  readonly id: string;
  readonly options: Readonly<WorkerOptions>;
  /**
   * Processes in the caller's own loop until no event is runnable right now
   * (events waiting out a backoff are not) and no batch this worker's started
   * loops hold is still uncommitted. For scripts, tests and the embedded
   * store; a started worker does the same continuously.
   */
  drain(options?: { maxBatches?: number }): Promise<DrainResult>;
}

/**
 * The worker: `concurrency` loops, each claiming a batch, running it in one
 * transaction and claiming again while there is work; idle loops wake on the
 * inbox notification or the poll timer, whichever comes first.
 */
export function createWorker<Api = unknown>(input: CreateWorkerOptions<Api>): Worker {
  const options: WorkerOptions = { ...DEFAULT_WORKER_OPTIONS, ...input.options };
  const { db, metrics } = input;
  const id = input.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const logger = input.logger.child({ component: 'worker', worker_id: id });
  // The embedded store has one connection: parallel loops would only queue behind each other.
  const concurrency = db.kind === 'pglite' ? 1 : options.concurrency;
  const reapEveryMs = Math.min(5000, options.leaseSeconds * 500);

  let stopping = false;
  let stopController = new AbortController();
  let loops: Promise<void>[] = [];
  let unlisten: (() => Promise<void>) | undefined;
  let lastReapAt = 0;
  // The claim-and-batch each started loop is running now: drain() waits for them (see drain).
  const loopRuns = new Set<Promise<unknown>>();
  const sleepers = new Set<() => void>();
  // A notification that found every loop busy: the next loop about to sleep claims again instead.
  let wakePending = false;
  /** Batches being run now (after their claim): when each started and how many events it holds. */
  const running = new Set<{ startedAt: number; size: number }>();
  /** Whether the last batch to finish ran its events within QUICK_EVENT_MS each. */
  let lastBatchQuick = false;

  /**
   * Whether another loop should start claiming now. Not while QUICK_LOOPS loops are running batches of quick
   * events: they claim again as soon as they are done. Slow events are what more loops are for: once a running
   * batch has taken longer than quick events would, or the last one did, every notification and full batch
   * wakes another loop, up to the configured concurrency.
   */
  const moreLoopsWanted = (): boolean => {
    if (loopRuns.size < QUICK_LOOPS || !lastBatchQuick) return true;
    const now = performance.now();
    for (const r of running) if (now - r.startedAt > Math.max(r.size, 1) * QUICK_EVENT_MS) return true;
    return false;
  };

  const batchContext: BatchContext<Api> = {
    db,
    registry: input.registry,
    logger,
    api: input.api as Api,
    workerId: id,
    options,
    random: input.random ?? Math.random,
    stopping: () => stopping,
    get stopSignal() {
      return stopController.signal;
    },
  };

  const wakeAll = (): void => {
    for (const wake of sleepers) wake();
  };
  /**
   * One claim per notification, not one per loop: every loop claiming on every
   * flush's notification ran the claim query four times for one flush's events
   * (three of them finding nothing or a few rows), which under steady ingest cost
   * Postgres more than the events themselves. A loop that fills its batch wakes
   * the next one itself.
   */
  const wakeOne = (): void => {
    const first = sleepers.values().next();
    if (first.done) wakePending = true;
    else first.value();
  };
  /**
   * Notifications are coalesced: the first after a quiet spell wakes a loop at
   * once, later ones at most every WAKE_COALESCE_MS, so under steady ingest each
   * claim takes the events of several flushes instead of one flush's few (a claim
   * and its batch transaction cost about the same for 5 events as for 100).
   */
  let lastNotifiedWake = 0;
  let wakeTimer: NodeJS.Timeout | undefined;
  const onNotification = (): void => {
    if (!moreLoopsWanted()) {
      // The running loop claims again when its quick batch ends.
      wakePending = true;
      return;
    }
    if (wakeTimer) return;
    const wait = lastNotifiedWake + WAKE_COALESCE_MS - performance.now();
    if (wait <= 0) {
      lastNotifiedWake = performance.now();
      wakeOne();
      return;
    }
    wakeTimer = setTimeout(() => {
      wakeTimer = undefined;
      lastNotifiedWake = performance.now();
      wakeOne();
    }, wait);
  };

  /** Only stop() cuts these short: a loop waiting out the claim spacing takes no notification's wake from an idle one. */
  const pauses = new Set<() => void>();
  const pause = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        pauses.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      pauses.add(done);
    });

  /** Resolves true when woken (a notification, a full batch, stop) and false when the time ran out. */
  const sleep = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      const finish = (woken: boolean): void => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve(woken);
      };
      const wake = (): void => finish(true);
      const timer = setTimeout(() => finish(false), ms);
      sleepers.add(wake);
    });
  // When a loop of this worker last began a claim: the poll fallback needs one claim per interval, not one per loop.
  let lastClaimAt = Number.NEGATIVE_INFINITY;

  function record(outcomes: readonly EventOutcome[]): void {
    if (!metrics) return;
    for (const { row, completion, handlerRun } of outcomes) {
      const label = eventTypeLabel(row.type);
      if (handlerRun) {
        metrics.handlerDuration.hot({ event_type: label }).observe(handlerRun.durationMs / 1000);
        if (handlerRun.outcome === 'failed') metrics.handlerFailures.hot({ event_type: label }).inc();
      }
      if (completion.attemptsDelta === 0 && completion.status !== 'failed')
        metrics.eventsProcessed.hot({ event_type: label, status: completion.status }).inc();
    }
  }

  function report(outcomes: readonly EventOutcome[]): void {
    if (!input.onError) return;
    for (const { row, completion, handlerRun } of outcomes) {
      const { status } = completion;
      if (completion.attemptsDelta !== 0 || (status !== 'failed' && status !== 'dead' && status !== 'quarantined')) continue;
      const cause = handlerRun?.outcome === 'failed' ? handlerRun.error : completion.error;
      const error =
        status === 'quarantined'
          ? new EventError('event_quarantined', `${row.type} ${row.event_id} quarantined: ${completion.error ?? 'invalid'}`)
          : status === 'dead'
            ? new EventError(
                'event_dead',
                `${row.type} ${row.event_id} failed its last attempt (${row.attempts} of ${options.maxAttempts}); dead`,
                { cause },
              )
            : new EventError(
                'handler_failed',
                `a handler for ${row.type} ${row.event_id} failed (attempt ${row.attempts} of ${options.maxAttempts})`,
                { cause },
              );
      reportEventError(input.onError, logger, error, {
        eventId: row.event_id,
        type: row.type,
        status,
        attempt: row.attempts,
        retryInMs: completion.retryInMs,
        source: 'worker',
      });
    }
  }

  async function reapIfDue(): Promise<void> {
    const now = Date.now();
    if (now - lastReapAt < reapEveryMs) return;
    lastReapAt = now;
    const reaped = [
      ...(await reapOrphanedAttempts(db, options.maxAttempts, options.leaseSeconds)),
      ...(await reapExpiredLeases(db, options.maxAttempts)),
    ];
    for (const r of reaped) {
      logger.warn({ event_id: r.event_id, type: r.type, status: r.status }, 'reclaimed an event whose worker stopped (lease expired)');
      if (r.status === 'dead') {
        metrics?.eventsProcessed.inc({ event_type: eventTypeLabel(r.type), status: 'dead' });
        const error = new EventError(
          'event_dead',
          `${r.type} ${r.event_id} ran out of attempts while its worker was gone (lease expired); dead`,
        );
        reportEventError(input.onError, logger, error, {
          eventId: r.event_id,
          type: r.type,
          status: 'dead',
          attempt: options.maxAttempts,
          retryInMs: null,
          source: 'worker',
        });
      }
    }
  }

  /**
   * One claim and its batch, sized by the loop's sizer; undefined when nothing
   * was runnable. `full` when the claim took as many events as it asked for.
   */
  async function runOnce(sizer: ClaimSizer): Promise<{ outcomes: EventOutcome[]; full: boolean; quick: boolean } | undefined> {
    lastClaimAt = performance.now();
    await reapIfDue();
    const limit = sizer.limit;
    const claimStarted = performance.now();
    const claimed = await claimBatch(db, {
      workerId: id,
      limit,
      orderingHoldSeconds: options.orderingHoldSeconds,
    });
    const batchStarted = performance.now();
    metrics?.workerClaimDuration.observe((batchStarted - claimStarted) / 1000);
    if (!claimed) return undefined;
    const batch = { startedAt: batchStarted, size: claimed.events.length };
    running.add(batch);
    let outcomes: EventOutcome[];
    try {
      outcomes = await processClaimed(batchContext, claimed);
    } finally {
      running.delete(batch);
    }
    const elapsedMs = performance.now() - batchStarted;
    metrics?.workerBatchDuration.observe(elapsedMs / 1000);
    const ran = outcomes.filter((o) => o.completion.attemptsDelta === 0).length;
    sizer.after({ claimed: claimed.events.length, ran, limit, elapsedMs });
    const quick = elapsedMs <= Math.max(ran, 1) * QUICK_EVENT_MS;
    lastBatchQuick = quick;
    record(outcomes);
    report(outcomes);
    return { outcomes, full: claimed.events.length >= limit, quick };
  }

  /**
   * Claims keep the notifications' spacing however they are woken, unless a full batch has just shown a backlog. A claim
   * left pending by a notification that found two loops busy ran the moment either finished: under steady ingest
   * two loops took turns claiming, back to back, what had arrived during the other's batch, and in `serve` that made
   * batches of 77 events where the spacing allows 250, each paying the same statements (docs/benchmarks.md, "Stop
   * 47"; test/worker/polling.test.ts). A poll interval shorter than the spacing is a wish for less delay: it wins.
   */
  const claimSpacingMs = Math.min(WAKE_COALESCE_MS, options.pollIntervalMs);
  async function awaitClaimSpacing(): Promise<void> {
    // runOnce sets lastClaimAt before its first await, so two loops that wake together do not both pass.
    for (let wait = lastClaimAt + claimSpacingMs - performance.now(); wait > 0 && !stopping;) {
      await pause(wait);
      wait = lastClaimAt + claimSpacingMs - performance.now();
    }
  }

  async function loop(n: number): Promise<void> {
    const sizer = createClaimSizer(options.batchSize);
    let afterFullBatch = false;
    while (!stopping) {
      let yielded = false;
      try {
        if (!afterFullBatch) await awaitClaimSpacing();
        afterFullBatch = false;
        if (stopping) break;
        wakePending = false;
        const run = runOnce(sizer);
        loopRuns.add(run);
        const ran = await run.finally(() => loopRuns.delete(run));
        if (ran?.full) {
          // A full batch: there is likely more. Slow events: another loop joins this one.
          if (!ran.quick) {
            wakeOne();
            afterFullBatch = true;
            continue;
          }
          // Quick events: QUICK_LOOPS loops are enough. If that many others run, they claim again when done.
          if (loopRuns.size < QUICK_LOOPS) {
            afterFullBatch = true;
            continue;
          }
          wakePending = true;
          yielded = true;
        }
      } catch (err) {
        logger.error({ err, loop: n }, 'worker loop error; retrying after the poll interval');
      }
      if (stopping) break;
      // What arrived while this loop ran notified with every loop busy: claim it now rather than after the poll
      // (unless this loop has just left the work to another).
      if (wakePending && !yielded) {
        wakePending = false;
        continue;
      }
      // The poll is the fallback for what no notification announces (a backoff that ran out, a notification
      // missed). One claim per interval finds that for every loop, and each claim that finds nothing still walks
      // the front of the claim order: a loop whose time runs out within an interval of another loop's claim sleeps
      // on until an interval has passed since it (test/worker/polling.test.ts). Nor does it claim while
      // QUICK_LOOPS loops run batches of quick events, as a notification would not wake it then: they claim again
      // when done. On a busy machine their batches outlasted the poll interval, and a third loop joined
      // (test/worker/loops.test.ts).
      let woken = await sleep(options.pollIntervalMs);
      while (!woken && !stopping) {
        const sinceClaim = performance.now() - lastClaimAt;
        if (sinceClaim < options.pollIntervalMs) woken = await sleep(Math.max(1, options.pollIntervalMs - sinceClaim));
        else if (!moreLoopsWanted()) woken = await sleep(options.pollIntervalMs);
        else break;
      }
    }
  }

  return {
    name: 'worker',
    id,
    options,

    async start() {
      if (loops.length > 0) return;
      stopping = false;
      if (stopController.signal.aborted) stopController = new AbortController();
      if (options.listen) {
        unlisten = await db.listen(INBOX_CHANNEL, onNotification).catch((err: unknown) => {
          logger.warn({ err }, 'could not LISTEN for new events; polling only');
          return undefined;
        });
      }
      loops = Array.from({ length: concurrency }, (_, n) => loop(n));
      logger.info({ concurrency, batch_size: options.batchSize, store: db.kind }, 'worker started');
    },

    async stop(deadlineMs) {
      stopping = true;
      clearTimeout(wakeTimer);
      wakeTimer = undefined;
      wakeAll();
      for (const done of pauses) done();
      // At the deadline a handler still running is interrupted; its batch releases it and commits.
      const hardStop = setTimeout(() => stopController.abort(), Math.max(0, deadlineMs - 250));
      try {
        await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, deadlineMs).unref())]);
      } finally {
        clearTimeout(hardStop);
        loops = [];
        await unlisten?.().catch(() => undefined);
        unlisten = undefined;
      }
      logger.info('worker stopped');
    },

    async drain(drainOptions = {}) {
      const result: DrainResult = { by_status: {}, batches: 0 };
      const max = drainOptions.maxBatches ?? Number.POSITIVE_INFINITY;
      lastReapAt = 0;
      const sizer = createClaimSizer(options.batchSize);
      while (result.batches < max) {
        const ran = await runOnce(sizer);
        if (!ran) {
          // Nothing to claim may mean a started loop holds the last batch: "drained" waits for its commit, then
          // claims again, since that batch may have released later events of its correspondences.
          if (loopRuns.size === 0) break;
          await Promise.allSettled([...loopRuns]);
          continue;
        }
        result.batches++;
        for (const o of ran.outcomes) result.by_status[o.completion.status] = (result.by_status[o.completion.status] ?? 0) + 1;
      }
      return result;
    },
  };
}
