import { PostroomError } from '../errors.js';
import type { Logger } from '../logging/logger.js';

/** What became of an event when onError is called. */
export type EventErrorCode = 'handler_failed' | 'event_dead' | 'event_quarantined';

/** Reported to onError: a handler failed (and the event will be retried), an event is dead, or one was quarantined. */
export class EventError extends PostroomError {
  declare readonly code: EventErrorCode;
  constructor(code: EventErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
  }
}

export interface EventErrorContext {
  eventId: string;
  type: string;
  /** The inbox status the event now has. */
  status: 'failed' | 'dead' | 'quarantined';
  /** Attempts so far (0 for an event quarantined at ingress). */
  attempt: number;
  /** When a failed event runs again; null when it will not by itself. */
  retryInMs: number | null;
  /** Where it was decided: ingress (a signed body that is not an envelope) or the worker. */
  source: 'ingress' | 'worker';
}

/** Error reporting (Sentry and the like). Called after the outcome is committed; what it throws or rejects is logged, never retried. */
export type OnErrorHook = (error: EventError, context: EventErrorContext) => void | Promise<void>;

/** Calls the hook without letting it disturb the caller. */
export function reportEventError(hook: OnErrorHook | undefined, logger: Logger, error: EventError, context: EventErrorContext): void {
  if (!hook) return;
  const warn = (err: unknown): void => logger.warn({ err, event_id: context.eventId }, 'the onError hook failed');
  try {
    const result = hook(error, context);
    if (result && typeof (result as Promise<void>).then === 'function') (result as Promise<void>).then(undefined, warn);
  } catch (err) {
    warn(err);
  }
}
