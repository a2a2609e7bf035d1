import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Component } from '../lifecycle/component.js';
import type { Db } from '../db/types.js';
import type { HandlerRegistry } from '../events/registry.js';
import { INBOX_CHANNEL } from '../inbox/types.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { OnErrorHook } from '../events/event-error.js';
import { createClaimSizer } from './claim-size.js';
import { runLoop, runOnce, type LoopDeps } from './loop.js';
import { DEFAULT_WORKER_OPTIONS, type WorkerOptions } from './options.js';
import { createLoopPacing } from './pacing.js';
import type { BatchContext } from './process-batch.js';
import { createReaper } from './reaping.js';
import { createWakeups } from './wakeups.js';

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
  /**
   * Milliseconds on a monotonic clock, read to time a batch's events: what sizes the next claim and gives back
   * the rest of a grown batch whose events turn slow (claim-size.ts). performance.now() unless a test injects one.
   */
  stopwatch?: () => number;
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
 * inbox notification or the poll timer, whichever comes first (loop.ts, with
 * pacing.ts deciding how many claim at once and wakeups.ts how they are woken).
 */
export function createWorker<Api = unknown>(input: CreateWorkerOptions<Api>): Worker {
  const options: WorkerOptions = { ...DEFAULT_WORKER_OPTIONS, ...input.options };
  const { db, metrics } = input;
  const id = input.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const logger = input.logger.child({ component: 'worker', worker_id: id });
  // The embedded store has one connection: parallel loops would only queue behind each other.
  const concurrency = db.kind === 'pglite' ? 1 : options.concurrency;

  let stopping = false;
  let stopController = new AbortController();
  let loops: Promise<void>[] = [];
  let unlisten: (() => Promise<void>) | undefined;
  const stopwatch = input.stopwatch ?? (() => performance.now());
  const pacing = createLoopPacing(options.pollIntervalMs, stopwatch);
  const wakeups = createWakeups(pacing.moreLoopsWanted);
  const batchContext: BatchContext<Api> = {
    db,
    registry: input.registry,
    logger,
    api: input.api as Api,
    workerId: id,
    options,
    random: input.random ?? Math.random,
    stopwatch,
    stopping: () => stopping,
    get stopSignal() {
      return stopController.signal;
    },
  };
  const deps: LoopDeps<Api> = {
    db,
    workerId: id,
    options,
    logger,
    metrics,
    onError: input.onError,
    batchContext,
    pacing,
    wakeups,
    reaper: createReaper({ db, logger, metrics, onError: input.onError, options }),
    stopwatch,
    isStopping: () => stopping,
  };

  return {
    name: 'worker',
    id,
    options,

    async start() {
      if (loops.length > 0) return;
      stopping = false;
      if (stopController.signal.aborted) stopController = new AbortController();
      if (options.listen) {
        unlisten = await db.listen(INBOX_CHANNEL, wakeups.onNotification).catch((err: unknown) => {
          logger.warn({ err }, 'could not LISTEN for new events; polling only');
          return undefined;
        });
      }
      loops = Array.from({ length: concurrency }, (_, n) => runLoop(deps, n));
      logger.info({ concurrency, batch_size: options.batchSize, store: db.kind }, 'worker started');
    },

    async stop(deadlineMs) {
      stopping = true;
      wakeups.wakeEveryLoop();
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
      deps.reaper.makeDue();
      const sizer = createClaimSizer(options.batchSize);
      while (result.batches < max) {
        const ran = await runOnce(deps, sizer);
        if (!ran) {
          // Nothing to claim may mean a started loop holds the last batch: "drained" waits for its commit, then
          // claims again, since that batch may have released later events of its correspondences.
          if (pacing.loopRuns.size === 0) break;
          await Promise.allSettled([...pacing.loopRuns]);
          continue;
        }
        result.batches++;
        for (const o of ran.outcomes) result.by_status[o.completion.status] = (result.by_status[o.completion.status] ?? 0) + 1;
      }
      return result;
    },
  };
}
