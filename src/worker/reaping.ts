import type { Db } from '../db/types.js';
import { EventError, reportEventError, type OnErrorHook } from '../events/event-error.js';
import type { Logger } from '../logging/logger.js';
import { eventTypeLabel } from '../metrics/labels.js';
import type { Metrics } from '../metrics/metrics.js';
import { reapExpiredLeases, reapOrphanedAttempts } from './claim-queries.js';
import type { WorkerOptions } from './options.js';

/** Takes back events whose worker stopped without finishing them, at most every few seconds. */
export interface Reaper {
  reapIfDue(): Promise<void>;
  /** The next reapIfDue reaps, however recently the last one did. */
  makeDue(): void;
}

export function createReaper(deps: {
  db: Db;
  logger: Logger;
  metrics: Metrics | undefined;
  onError: OnErrorHook | undefined;
  options: Pick<WorkerOptions, 'maxAttempts' | 'leaseSeconds'>;
}): Reaper {
  const { db, logger, metrics, options } = deps;
  const reapEveryMs = Math.min(5000, options.leaseSeconds * 500);
  let lastReapAt = 0;
  return {
    async reapIfDue() {
      const now = Date.now();
      if (now - lastReapAt < reapEveryMs) return;
      lastReapAt = now;
      const reaped = [
        ...(await reapOrphanedAttempts(db, options.maxAttempts, options.leaseSeconds)),
        ...(await reapExpiredLeases(db, options.maxAttempts)),
      ];
      for (const r of reaped) {
        logger.warn({ event_id: r.event_id, type: r.type, status: r.status }, 'reclaimed an event whose worker stopped (lease expired)');
        if (r.status !== 'dead') continue;
        metrics?.eventsProcessed.inc({ event_type: eventTypeLabel(r.type), status: 'dead' });
        const error = new EventError(
          'event_dead',
          `${r.type} ${r.event_id} ran out of attempts while its worker was gone (lease expired); dead`,
        );
        reportEventError(deps.onError, logger, error, {
          eventId: r.event_id,
          type: r.type,
          status: 'dead',
          attempt: options.maxAttempts,
          retryInMs: null,
          source: 'worker',
        });
      }
    },
    makeDue() {
      lastReapAt = 0;
    },
  };
}
