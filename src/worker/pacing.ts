import { QUICK_EVENT_MS } from './claim-size.js';

/** The shortest spacing of claims woken by notifications (wakeups.ts), and of any claim not following a full batch. */
export const WAKE_COALESCE_MS = 50;

/**
 * How many loops claim side by side while events are quick. More walk the claim order past each other's
 * batches and contend for Postgres; one alone leaves Postgres idle while Node runs its batch. Draining a
 * backlog, one loop was 0.80 times as fast as four and two 1.06 times (`npm run bench -- worker`, with
 * BENCH_WORKER_BUILDS comparing the builds).
 */
export const QUICK_LOOPS = 2;

/** A batch being run (after its claim): when it started (on the worker's stopwatch) and how many events it holds. */
interface RunningBatch {
  startedAt: number;
  size: number;
}

/** How a worker's loops take turns: how many claim at once and how closely claims follow each other. */
export interface LoopPacing {
  /** The claim-and-batch each started loop is running now (drain() waits for them). */
  readonly loopRuns: Set<Promise<unknown>>;
  readonly running: Set<RunningBatch>;
  /** Whether the last batch to finish ran its events within QUICK_EVENT_MS each. */
  lastBatchQuick: boolean;
  /** When a loop last began a claim: the poll fallback needs one claim per interval, not one per loop. */
  lastClaimAt: number;
  /**
   * Whether another loop should start claiming now. Not while QUICK_LOOPS loops are running batches of quick
   * events: they claim again as soon as they are done. Slow events are what more loops are for: once a running
   * batch has taken longer than quick events would, or the last one did, every notification and full batch
   * wakes another loop, up to the configured concurrency.
   */
  moreLoopsWanted(): boolean;
  /**
   * Waits out the claim spacing since the last claim. Claims keep the notifications' spacing however they are
   * woken (unless a full batch has just shown a backlog, when the caller does not wait): otherwise two loops
   * take turns claiming, back to back, what arrived during the other's batch, and batches stay small while each
   * pays the same statements (test/worker/polling.test.ts). A poll interval shorter than the spacing is a wish
   * for less delay: it wins.
   */
  awaitClaimSpacing(isStopping: () => boolean, pause: (ms: number) => Promise<void>): Promise<void>;
}

export function createLoopPacing(pollIntervalMs: number, stopwatch: () => number = () => performance.now()): LoopPacing {
  const claimSpacingMs = Math.min(WAKE_COALESCE_MS, pollIntervalMs);
  const pacing: LoopPacing = {
    loopRuns: new Set(),
    running: new Set(),
    lastBatchQuick: false,
    lastClaimAt: Number.NEGATIVE_INFINITY,
    moreLoopsWanted() {
      if (pacing.loopRuns.size < QUICK_LOOPS || !pacing.lastBatchQuick) return true;
      const now = stopwatch();
      for (const r of pacing.running) if (now - r.startedAt > Math.max(r.size, 1) * QUICK_EVENT_MS) return true;
      return false;
    },
    async awaitClaimSpacing(isStopping, pause) {
      // A claim sets lastClaimAt before its first await, so two loops that wake together do not both pass.
      for (let wait = pacing.lastClaimAt + claimSpacingMs - performance.now(); wait > 0 && !isStopping();) {
        await pause(wait);
        wait = pacing.lastClaimAt + claimSpacingMs - performance.now();
      }
    },
  };
  return pacing;
}
