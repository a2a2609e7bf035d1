import type { Clock } from '../clock.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/types.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';

/** A long-running part of a role (worker loop, reconciler schedule). */
export interface Component {
  name: string;
  start(): Promise<void>;
  /** Finish in-flight work within the deadline, release the rest. */
  stop(deadlineMs: number): Promise<void>;
}

/** What the composition root hands each component factory once the store is open. */
export interface ComponentDeps {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
}
