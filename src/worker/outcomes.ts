import { EventError, reportEventError, type OnErrorHook } from '../events/event-error.js';
import type { Logger } from '../logging/logger.js';
import { eventTypeLabel } from '../metrics/labels.js';
import { signedAtSeconds, typeGroupOf } from '../metrics/lag.js';
import type { Metrics } from '../metrics/metrics.js';
import type { EventOutcome } from './process-batch.js';

/** Counts a committed batch's outcomes: handler durations and failures, and each event that reached its final status. */
export function recordOutcomes(metrics: Metrics | undefined, outcomes: readonly EventOutcome[], nowMs = Date.now()): void {
  if (!metrics) return;
  for (const { row, completion, handlerRun } of outcomes) {
    const label = eventTypeLabel(row.type);
    if (handlerRun) {
      metrics.handlerDuration.hot({ event_type: label }).observe(handlerRun.durationMs / 1000);
      if (handlerRun.outcome === 'failed') metrics.handlerFailures.hot({ event_type: label }).inc();
    }
    if (completion.attemptsDelta === 0 && completion.status !== 'failed') {
      metrics.eventsProcessed.hot({ event_type: label, status: completion.status }).inc();
      observeAge(metrics, row, completion.status, nowMs);
    }
  }
}

/** The event's age as the worker finished it, from both origins; an origin the row does not have is skipped. */
function observeAge(metrics: Metrics, row: EventOutcome['row'], status: string, nowMs: number): void {
  const common = { type_group: typeGroupOf(row.type), outcome: status, source: row.source };
  const signedAt = signedAtSeconds(row.signature_header);
  if (!Number.isNaN(signedAt)) metrics.processedAge.hot({ since: 'signed', ...common }).observe(Math.max(0, nowMs / 1000 - signedAt));
  if (row.occurred_at !== null) {
    metrics.processedAge.hot({ since: 'occurred', ...common }).observe(Math.max(0, (nowMs - row.occurred_at.getTime()) / 1000));
  }
}

/** Tells the onError hook of each event of a committed batch that failed, died or was quarantined. */
export function reportOutcomes(
  onError: OnErrorHook | undefined,
  logger: Logger,
  maxAttempts: number,
  outcomes: readonly EventOutcome[],
): void {
  if (!onError) return;
  for (const { row, completion, handlerRun } of outcomes) {
    const { status } = completion;
    if (completion.attemptsDelta !== 0 || (status !== 'failed' && status !== 'dead' && status !== 'quarantined')) continue;
    const cause = handlerRun?.outcome === 'failed' ? handlerRun.error : completion.error;
    const error =
      status === 'quarantined'
        ? new EventError('event_quarantined', `${row.type} ${row.event_id} quarantined: ${completion.error ?? 'invalid'}`)
        : status === 'dead'
          ? new EventError('event_dead', `${row.type} ${row.event_id} failed its last attempt (${row.attempts} of ${maxAttempts}); dead`, {
              cause,
            })
          : new EventError(
              'handler_failed',
              `a handler for ${row.type} ${row.event_id} failed (attempt ${row.attempts} of ${maxAttempts})`,
              {
                cause,
              },
            );
    reportEventError(onError, logger, error, {
      eventId: row.event_id,
      type: row.type,
      status,
      attempt: row.attempts,
      retryInMs: completion.retryInMs,
      source: 'worker',
    });
  }
}
