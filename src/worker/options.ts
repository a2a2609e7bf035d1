import type { WorkerConfig } from '../config/config.js';
import type { BackoffPolicy } from '../backoff.js';
import { DEFAULT_RETRY_BACKOFF } from './backoff.js';

export interface WorkerOptions {
  /** Parallel batch loops (each holds one connection while it runs a batch). */
  concurrency: number;
  /**
   * The most events one claim takes. A loop starts at 100 (or this, if lower) and
   * claims more while events finish quickly (see claim-size.ts).
   */
  batchSize: number;
  /** After this many attempts a failing event is `dead`. */
  maxAttempts: number;
  /** How long an event may wait for an earlier event of its correspondence. 0 turns ordering off. */
  orderingHoldSeconds: number;
  leaseSeconds: number;
  /** Polling fallback: notifications are hints and may be missed. */
  pollIntervalMs: number;
  handlerTimeoutMs: number;
  /** Delay before an event's next attempt; `jitter` defaults to `equal` here. */
  retryBackoff: BackoffPolicy;
  /** LISTEN for inbox inserts (default true). */
  listen: boolean;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = {
  concurrency: 4,
  batchSize: 500,
  maxAttempts: 10,
  orderingHoldSeconds: 300,
  leaseSeconds: 60,
  pollIntervalMs: 1000,
  handlerTimeoutMs: 30_000,
  retryBackoff: DEFAULT_RETRY_BACKOFF,
  listen: true,
};

export function workerOptionsFromConfig(config: WorkerConfig): WorkerOptions {
  return {
    ...DEFAULT_WORKER_OPTIONS,
    concurrency: config.concurrency,
    batchSize: config.batchSize,
    maxAttempts: config.maxAttempts,
    orderingHoldSeconds: config.orderingHoldSeconds,
    leaseSeconds: config.leaseSeconds,
    pollIntervalMs: config.pollIntervalMs,
    handlerTimeoutMs: config.handlerTimeoutMs,
  };
}
