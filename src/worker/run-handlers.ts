import type { Queryable } from '../db/types.js';
import { PostroomError } from '../errors.js';
import type { AnyKnownEvent, UnknownEvent } from '../events/catalogue.js';
import type { HandlerContext } from '../events/handlers.js';
import type { BoundHandler } from '../events/registry.js';
import type { Logger } from '../logging/logger.js';
import { HandlerInterruptedError, HandlerTimeoutError } from './errors.js';
import { openHandlerTx } from './handler-tx.js';
import { eventTypeLabel } from '../metrics/labels.js';
import { ROOT_CONTEXT, inSpan, type Context } from '../tracing/trace.js';

export type HandlerRun =
  | { outcome: 'ok'; durationMs: number }
  | { outcome: 'failed'; error: unknown; durationMs: number }
  /** The worker's stop deadline came first: undone and released, not counted as a failure. */
  | { outcome: 'interrupted'; durationMs: number };

export interface HandlerRunInput<Api> {
  tx: Queryable;
  handlers: ReadonlyArray<BoundHandler<Api>>;
  event: AnyKnownEvent | UnknownEvent;
  meta: Omit<HandlerContext<Api>, 'tx' | 'signal' | 'logger'>;
  logger: Logger;
  timeoutMs: number;
  /** Aborted when the worker's stop deadline passes. */
  stopSignal: AbortSignal;
  /** The worker's span for the event: each handler's span is its child, and the active span while the handler runs. */
  trace?: Context | undefined;
}

/**
 * Runs one event's handlers, in order, inside a savepoint of the batch
 * transaction, bounded by the handler timeout and the worker's stop deadline.
 * Either every handler's database writes are kept, or none.
 */
export async function runHandlers<Api>(input: HandlerRunInput<Api>): Promise<HandlerRun> {
  const started = performance.now();
  const elapsed = (): number => performance.now() - started;
  const htx = openHandlerTx(input.tx);
  const abort = new AbortController();
  const ctx: HandlerContext<Api> = {
    ...input.meta,
    tx: htx.tx,
    signal: abort.signal,
    logger: input.logger.child({ event_id: input.event.event_id, type: input.event.type }),
  };

  let timer: NodeJS.Timeout | undefined;
  let onStop: (() => void) | undefined;
  const limits = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HandlerTimeoutError(input.timeoutMs)), input.timeoutMs);
    onStop = () => reject(new HandlerInterruptedError());
    if (input.stopSignal.aborted) onStop();
    else input.stopSignal.addEventListener('abort', onStop, { once: true });
  });
  limits.catch(() => undefined);

  const spanName = `handle ${eventTypeLabel(input.event.type)}`;
  const parent = input.trace ?? ROOT_CONTEXT;
  const run = async (): Promise<void> => {
    for (const [i, handler] of input.handlers.entries()) {
      // Active while the handler runs: what it calls (pg, HTTP) under an SDK's instrumentations lands inside.
      await inSpan(
        spanName,
        { attributes: { 'postroom.handler.index': i, ...(handler.name ? { 'code.function.name': handler.name } : {}) } },
        parent,
        async () => {
          await handler(input.event, ctx);
        },
      );
    }
  };

  let error: unknown;
  let failed = false;
  try {
    await Promise.race([run(), limits]);
  } catch (err) {
    failed = true;
    error = err;
  } finally {
    clearTimeout(timer);
    if (onStop) input.stopSignal.removeEventListener('abort', onStop);
  }

  if (failed) {
    // Tell a handler still running (timed out, interrupted) to give up its outside work.
    abort.abort(error);
    await htx.settle(false);
    return error instanceof HandlerInterruptedError
      ? { outcome: 'interrupted', durationMs: elapsed() }
      : { outcome: 'failed', error, durationMs: elapsed() };
  }
  try {
    await htx.settle(true);
  } catch (err) {
    return {
      outcome: 'failed',
      error: new PostroomError(
        'handler_left_tx_aborted',
        `the handler returned, but a statement it ran on ctx.tx had failed: ${(err as Error).message}`,
        { cause: err },
      ),
      durationMs: elapsed(),
    };
  }
  return { outcome: 'ok', durationMs: elapsed() };
}
