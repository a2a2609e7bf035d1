import type { Db, Queryable } from '../db/types.js';
import { isProbeEvent } from './probe-events.js';
import { describeError } from '../errors.js';
import type { HandlerRegistry } from '../events/registry.js';
import { validateEvent, type ValidatedEvent } from '../events/validate.js';
import type { Logger } from '../logging/logger.js';
import { applyToProjection } from '../projection/apply.js';
import { backoffDelay } from '../backoff.js';
import { BASE_CLAIM_SIZE, QUICK_EVENT_MS } from './claim-size.js';
import { withEqualJitter } from './backoff.js';
import type { ClaimedBatch, ClaimedEvent } from './claim-queries.js';
import { completeEvents, takeBatch, takeOneOfBatch, type Completion } from './complete-queries.js';
import type { WorkerOptions } from './options.js';
import { runHandlers, type HandlerRun } from './run-handlers.js';
import { eventTypeLabel } from '../metrics/labels.js';
import { ATTR, MESSAGING_SYSTEM, SpanKind, SpanStatusCode, contextFromTraceparent, trace, tracer } from '../tracing/trace.js';
import { TEST_EVENT_TYPE } from '../events/type-names.js';

export interface BatchContext<Api> {
  db: Db;
  registry: HandlerRegistry<Api>;
  logger: Logger;
  api: Api;
  workerId: string;
  options: WorkerOptions;
  random: () => number;
  /** Times the batch's events (CreateWorkerOptions.stopwatch). */
  stopwatch(): number;
  /** True once the worker is stopping: events not yet started are released. */
  stopping(): boolean;
  /** Aborted at the stop deadline: a handler still running is interrupted. */
  stopSignal: AbortSignal;
}

/** What became of one claimed event, once its transaction committed. */
export interface EventOutcome {
  row: ClaimedEvent;
  completion: Completion;
  handlerRun: HandlerRun | undefined;
}

interface Entry {
  row: ClaimedEvent;
  validated: ValidatedEvent;
}

const MAX_ERROR_LENGTH = 1000;

function errorText(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  const text = typeof code === 'string' ? `${code}: ${describeError(err)}` : describeError(err);
  return text.slice(0, MAX_ERROR_LENGTH);
}

/**
 * Runs a claimed batch in one transaction: the projection for all its valid
 * events (two statements), each event's handlers in a savepoint, then every
 * status in one statement, and one commit that also ends the batch's
 * inbox_attempts row. If the transaction fails outside a handler (a projection
 * or connection error), the batch is retried event by event so one bad event
 * cannot hold the others back. Returns the outcomes that were committed.
 */
export async function processClaimed<Api>(bc: BatchContext<Api>, batch: ClaimedBatch): Promise<EventOutcome[]> {
  const entries = batch.events.map((row) => ({ row, validated: validateEvent(row) }));
  // Correspondences with an event that did not finish here: their later events wait.
  const held = new Set<string>();
  try {
    return await bc.db.transaction(async (tx) => {
      if (await takeBatch(tx, batch.batchId)) return runBatch(bc, tx, entries, held);
      lostBatch(bc, entries);
      return [];
    });
  } catch (err) {
    if (entries.length === 1) return recordFailure(bc, batch.batchId, entries[0]!, err, held);
    bc.logger.warn({ err, events: entries.length }, 'batch transaction failed; running its events one at a time');
  }
  const outcomes: EventOutcome[] = [];
  for (const entry of entries) {
    try {
      outcomes.push(
        ...(await bc.db.transaction(async (tx) => {
          if (await takeOneOfBatch(tx, batch.batchId, entry.row.event_id)) return runBatch(bc, tx, [entry], held);
          lostBatch(bc, [entry]);
          return [];
        })),
      );
    } catch (err) {
      outcomes.push(...(await recordFailure(bc, batch.batchId, entry, err, held)));
    }
  }
  return outcomes;
}

function lostBatch<Api>(bc: BatchContext<Api>, entries: readonly Entry[]): void {
  bc.logger.warn(
    { lost: entries.map((e) => e.row.event_id) },
    'the lease expired before processing began; the events were handed back to the queue',
  );
}

async function runBatch<Api>(bc: BatchContext<Api>, tx: Queryable, entries: readonly Entry[], held: Set<string>): Promise<EventOutcome[]> {
  // The projection follows every valid event, whatever the handlers do: it is
  // what the service told us, and applying an event twice changes nothing.
  await applyToProjection(
    tx,
    entries.flatMap((e) => (e.validated.kind === 'known' ? [e.validated.event] : [])),
    new Set(entries.flatMap((e) => (e.row.source === 'reconciler' ? [e.row.event_id] : []))),
  );

  // A claim grows past BASE_CLAIM_SIZE only after quick batches (claim-size.ts). If this one's events turn out
  // slow, the part past that size is given back rather than run one after another here: it goes back to the
  // queue, its attempts uncounted, for claims of the base size that the other loops run side by side.
  const started = bc.stopwatch();
  const outcomes: EventOutcome[] = [];
  for (const [i, entry] of entries.entries()) {
    const giveBack = i >= BASE_CLAIM_SIZE && bc.stopwatch() - started > i * QUICK_EVENT_MS;
    outcomes.push(await runTraced(bc, tx, entry, held, giveBack));
  }

  const finishedWithCorrespondence = outcomes.some(
    (o) => o.row.correspondence_id !== null && o.completion.status !== 'failed' && o.completion.attemptsDelta === 0,
  );
  await completeEvents(
    tx,
    outcomes.map((o) => o.completion),
    finishedWithCorrespondence && bc.options.orderingHoldSeconds > 0,
  );
  return outcomes;
}

/**
 * runOne inside the event's processing span: a consumer span, the child of the span of the request that
 * delivered the event (its stored traceparent, migrations/028), or of the reconcile run that wrote it; so
 * the handlers' spans, its children, are in that trace.
 */
async function runTraced<Api>(
  bc: BatchContext<Api>,
  tx: Queryable,
  entry: Entry,
  held: Set<string>,
  giveBack: boolean,
): Promise<EventOutcome> {
  const { row } = entry;
  const parent = contextFromTraceparent(row.trace_context);
  const span = tracer.startSpan(`process ${eventTypeLabel(row.type)}`, { kind: SpanKind.CONSUMER }, parent);
  if (span.isRecording()) {
    span.setAttributes({
      [ATTR.messagingSystem]: MESSAGING_SYSTEM,
      [ATTR.operationType]: 'process',
      [ATTR.messageId]: row.event_id,
      [ATTR.eventType]: row.type,
      [ATTR.source]: row.source,
      [ATTR.attempt]: row.attempts,
    });
  }
  try {
    const outcome = await runOne(bc, tx, entry, held, giveBack, trace.setSpan(parent, span));
    if (span.isRecording()) {
      span.setAttribute(ATTR.outcome, outcome.completion.status);
      if (outcome.completion.status === 'failed' || outcome.completion.status === 'dead')
        span.setStatus({ code: SpanStatusCode.ERROR, message: `handler failed; ${outcome.completion.status}` });
    }
    return outcome;
  } finally {
    span.end();
  }
}

async function runOne<Api>(
  bc: BatchContext<Api>,
  tx: Queryable,
  entry: Entry,
  held: Set<string>,
  giveBack: boolean,
  traceContext: ReturnType<typeof contextFromTraceparent>,
): Promise<EventOutcome> {
  const { row, validated } = entry;
  const done = (completion: Omit<Completion, 'eventId'>, handlerRun?: HandlerRun): EventOutcome => ({
    row,
    completion: { eventId: row.event_id, receivedAt: row.received_at, ...completion },
    handlerRun,
  });
  const release = (): EventOutcome => {
    if (row.correspondence_id !== null) held.add(row.correspondence_id);
    return done({ status: row.attempts <= 1 ? 'received' : 'failed', error: null, retryInMs: 0, attemptsDelta: -1 });
  };

  if (validated.kind === 'invalid') {
    bc.logger.warn(
      { event_id: row.event_id, type: row.type, reason: validated.reason },
      'event data does not match the catalogue; quarantined',
    );
    return done({ status: 'quarantined', error: validated.reason, retryInMs: null, attemptsDelta: 0 });
  }
  if ((row.correspondence_id !== null && held.has(row.correspondence_id)) || bc.stopping() || giveBack) return release();

  const handlers = bc.registry.handlersFor(validated.kind, row.type);
  if (handlers.length > 0 && row.type === TEST_EVENT_TYPE && (await isProbeEvent(tx, row.event_id, row.received_at)))
    return done({ status: 'processed', error: null, retryInMs: null, attemptsDelta: 0 });
  if (handlers.length === 0) {
    return done({ status: validated.kind === 'known' ? 'processed' : 'skipped', error: null, retryInMs: null, attemptsDelta: 0 });
  }

  const run = await runHandlers({
    tx,
    handlers,
    event: validated.event,
    meta: { attempt: row.attempts, eventId: row.event_id, type: row.type, source: row.source, receivedAt: row.received_at, api: bc.api },
    logger: bc.logger,
    timeoutMs: bc.options.handlerTimeoutMs,
    stopSignal: bc.stopSignal,
    trace: traceContext,
  });
  if (run.outcome === 'ok') return done({ status: 'processed', error: null, retryInMs: null, attemptsDelta: 0 }, run);
  if (run.outcome === 'interrupted') {
    const out = release();
    return { ...out, handlerRun: run };
  }
  if (row.correspondence_id !== null) held.add(row.correspondence_id);
  return failure(bc, row, run.error, run);
}

function failure<Api>(bc: BatchContext<Api>, row: ClaimedEvent, err: unknown, run: HandlerRun | undefined): EventOutcome {
  const error = errorText(err);
  const dead = row.attempts >= bc.options.maxAttempts;
  const log = { event_id: row.event_id, type: row.type, attempt: row.attempts, max_attempts: bc.options.maxAttempts, err: error };
  if (dead) {
    bc.logger.error(log, 'event failed its last attempt; dead (replay it with `postroom inbox replay` once fixed)');
    return {
      row,
      completion: { eventId: row.event_id, receivedAt: row.received_at, status: 'dead', error, retryInMs: null, attemptsDelta: 0 },
      handlerRun: run,
    };
  }
  const retryInMs = backoffDelay(row.attempts, bc.random, withEqualJitter(bc.options.retryBackoff));
  bc.logger.warn({ ...log, retry_in_ms: retryInMs }, 'event handler failed; will retry');
  return {
    row,
    completion: { eventId: row.event_id, receivedAt: row.received_at, status: 'failed', error, retryInMs, attemptsDelta: 0 },
    handlerRun: run,
  };
}

/** The event's own transaction failed: record the failure in a transaction of its own. */
async function recordFailure<Api>(
  bc: BatchContext<Api>,
  batchId: string,
  entry: Entry,
  err: unknown,
  held: Set<string>,
): Promise<EventOutcome[]> {
  if (entry.row.correspondence_id !== null) held.add(entry.row.correspondence_id);
  const outcome = failure(bc, entry.row, err, undefined);
  try {
    const updated = await bc.db.transaction(async (tx) =>
      (await takeOneOfBatch(tx, batchId, entry.row.event_id)) ? completeEvents(tx, [outcome.completion], false) : 0,
    );
    return updated === 1 ? [outcome] : [];
  } catch (again) {
    // The store is unreachable: the lease runs out and the reaper counts the attempt.
    bc.logger.error({ event_id: entry.row.event_id, err: again }, 'could not record a failure; the event returns when its lease expires');
    return [];
  }
}
