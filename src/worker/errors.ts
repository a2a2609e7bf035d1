import { PostroomError } from '../errors.js';

/** A handler ran longer than POSTROOM_HANDLER_TIMEOUT_MS; its writes are rolled back and the event retried. */
export class HandlerTimeoutError extends PostroomError {
  constructor(timeoutMs: number) {
    super('handler_timeout', `handler did not finish within ${timeoutMs} ms (POSTROOM_HANDLER_TIMEOUT_MS)`, { details: { timeoutMs } });
  }
}

/** The worker reached its stop deadline while a handler was still running; the event is released, not failed. */
export class HandlerInterruptedError extends PostroomError {
  constructor() {
    super('handler_interrupted', 'the worker stopped before the handler finished; the event was released for another attempt');
  }
}

/** A handler used ctx.tx after it returned or timed out (a query that was not awaited). */
export class HandlerTransactionClosedError extends PostroomError {
  constructor() {
    super('handler_tx_closed', 'ctx.tx was used after the handler finished or timed out; await every query inside the handler');
  }
}

/** The forwarder's target did not take the event after its retries. */
export class ForwardError extends PostroomError {
  constructor(message: string, details: Record<string, unknown>, cause?: unknown) {
    super('forward_failed', message, { details, cause });
  }
}
