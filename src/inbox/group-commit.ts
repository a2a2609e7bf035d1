import type { Db, Queryable } from '../db/types.js';
import { describeError, PostroomError, StoreUnavailableError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { EventInFlightError, flushLockSeed, type FlushLockSeed } from './flush-locks.js';
import { ensureInboxPartitions, insertFlush, isDataError, isMissingPartition, type FlushWrite } from './insert-queries.js';
import { ATTR, linksTo, ROOT_CONTEXT, SpanStatusCode, tracer, type Span } from '../tracing/trace.js';
import type { InsertOutcome, NewInboxEvent } from './types.js';

/**
 * The span of the flush whose waiters are being told, while they are: ingress answers each request from inside
 * the flush (accept.ts), so its request span can link to this one. A plain variable set around the loop, rather
 * than the span made active with context.with(): nothing the answers call needs it active, and a variable costs
 * no context object and no closure per flush.
 */
let answering: Span | undefined;

/** The flush span whose waiters are being told right now, if any. */
export function flushBeingAnswered(): Span | undefined {
  return answering;
}

/** Told once of a queued row's outcome: after the commit that holds it (or proves it already existed), or of the failure. */
export interface WriteSink {
  resolve(outcome: InsertOutcome): void;
  reject(err: unknown): void;
}

export interface InboxWriter {
  /** Resolves only after the commit that holds the row (or proves it already existed). */
  submit(event: NewInboxEvent): Promise<InsertOutcome>;
  /**
   * As submit, telling `sink` instead of making a promise. Ingress passes the entry that already
   * races the row against its ack budget (ingress/ack-deadline.ts): a promise here, and the
   * reactions passing it on, would be three more objects and a microtask turn per request.
   */
  enqueue(event: NewInboxEvent, sink: WriteSink): void;
  /** Stops taking work and waits for queued rows to be flushed. */
  close(): Promise<void>;
  readonly pending: number;
  /**
   * How long the writer has had work (queued or being flushed) without a flush
   * finishing; 0 when idle or making progress. Readiness compares it with the ack budget.
   */
  stalledMs(): number;
}

export interface FlushStats {
  rows: number;
  inserted: number;
  durationMs: number;
  ok: boolean;
}

export interface InboxWriterOptions {
  db: Db;
  logger: Logger;
  maxBatch: number;
  /**
   * A flush still unanswered after this long is abandoned: its statement gets
   * StoreUnavailableError and its connection is destroyed (Db.queryWithin), so the
   * next flush proceeds on another one. Set it to the ack budget: past that, every
   * waiter has been answered 503 already. Unset: flushes wait as long as the store.
   */
  flushTimeoutMs?: number;
  /**
   * A flush still running after this long no longer holds up the next one: the writer starts it on another
   * connection, up to MAX_FLUSHES at once, and the slow one finishes or reaches its own deadline
   * (flushTimeoutMs) alone. With the id locks (flush-locks.ts) two flushes never wait on each other, so one
   * hung connection costs only its own events. Postgres only (PGlite has one connection: a second flush
   * would wait behind the first). Unset: one flush at a time, always.
   */
  stallMs?: number;
  onFlush?: (stats: FlushStats) => void;
}

/**
 * Flushes running at once when the ones before are slow: one hung connection and two more that may be slow
 * too. Each holds a pooled connection; past this, a flush waits for one of them to end, as it would alone.
 */
export const MAX_FLUSHES = 3;

interface Waiter {
  event: NewInboxEvent;
  sink: WriteSink;
}

type Outcome = InsertOutcome | Error;

/**
 * Group commit: concurrent requests share one multi-row INSERT and one commit.
 * One flush runs at a time; while it runs, new rows queue and go in the next
 * flush, so batches grow with load and a lone request is written at once (no timer).
 * A flush slower than `stallMs` stops holding up the next one (InboxWriterOptions).
 */
export function createInboxWriter(options: InboxWriterOptions): InboxWriter {
  const queue: Waiter[] = [];
  let flushing: Promise<void> | undefined;
  let closed = false;
  // Flushes still running, the one the loop waits for and any it stopped waiting for (stallMs).
  const running = new Set<Promise<void>>();
  // Progress, for stalledMs(): when work last began waiting on an idle writer, and when a flush last finished.
  let busySince = 0;
  let lastFlushEnd = 0;
  const { flushTimeoutMs } = options;
  const postgres = options.db.kind === 'postgres';
  const locks = postgres ? flushLockSeed(options.db.schema) : undefined;
  const stallMs = postgres ? options.stallMs : undefined;

  async function writeBatch(batch: Waiter[]): Promise<void> {
    // The same event_id twice in one batch: the first is written, the others are its duplicates (rare: no array per id).
    const firsts = new Map<string, Waiter>();
    let repeats: Waiter[] | undefined;
    for (const w of batch) {
      if (firsts.has(w.event.eventId)) (repeats ??= []).push(w);
      else firsts.set(w.event.eventId, w);
    }
    const events: NewInboxEvent[] = [];
    for (const w of firsts.values()) events.push(w.event);
    // A flush commits many requests' rows: a span of its own, linked to theirs (and they to it, when answered).
    const span = tracer.startSpan('postroom.inbox.flush', undefined, ROOT_CONTEXT);
    if (span.isRecording()) {
      span.addLinks(linksTo(events.map((e) => e.traceContext)));
      span.setAttribute(ATTR.batchCount, batch.length);
    }
    const started = performance.now();
    // Every statement of this flush shares one deadline; flushes running side by side each have their own.
    const store = flushTimeoutMs === undefined ? options.db : withDeadline(options.db, started + flushTimeoutMs);
    const outcomes = await writeEvents(store, options.logger, locks, events);
    // Before the waiters are told: ingress answers its requests while they are (the flush's time is the store's).
    const finished = performance.now();
    let inserted = 0;
    let ok = true;
    let progressed = false;
    answering = span;
    for (const [id, w] of firsts) {
      const o = outcomes.get(id)!;
      // An abandoned flush (store unavailable past its deadline) did not finish: it is no progress.
      if (!(o instanceof StoreUnavailableError)) progressed = true;
      if (o instanceof Error) ok = false;
      else if (o !== 'duplicate') inserted++;
      tell(options.logger, w, o);
    }
    for (const w of repeats ?? []) {
      const o = outcomes.get(w.event.eventId)!;
      tell(options.logger, w, o instanceof Error ? o : 'duplicate');
    }
    answering = undefined;
    if (progressed) lastFlushEnd = Math.max(lastFlushEnd, finished);
    if (span.isRecording()) {
      span.setAttributes({ 'postroom.flush.inserted': inserted, [ATTR.outcome]: ok ? 'committed' : 'failed' });
      if (!ok) span.setStatus({ code: SpanStatusCode.ERROR, message: 'flush failed' });
    }
    span.end();
    options.onFlush?.({ rows: batch.length, inserted, durationMs: finished - started, ok });
  }

  function startFlush(): Promise<void> {
    const flush = writeBatch(queue.splice(0, options.maxBatch)).catch((err: unknown) => {
      options.logger.error({ err }, 'inbox flush failed after writing; the writer goes on');
    });
    running.add(flush);
    void flush.then(() => running.delete(flush));
    return flush;
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length > 0) {
        if (stallMs === undefined) {
          await startFlush();
          continue;
        }
        // Past MAX_FLUSHES, wait for any of them to end.
        if (running.size >= MAX_FLUSHES) {
          await Promise.race(running);
          continue;
        }
        await stalledAfter(startFlush(), stallMs);
      }
    } finally {
      flushing = undefined;
    }
  }

  function enqueue(event: NewInboxEvent, sink: WriteSink): void {
    if (closed) {
      sink.reject(new StoreUnavailableError('inbox writer is closed (shutting down)'));
      return;
    }
    if (!flushing && running.size === 0) busySince = performance.now();
    queue.push({ event, sink });
    flushing ??= drain();
  }

  return {
    submit(event) {
      return new Promise<InsertOutcome>((resolve, reject) => enqueue(event, { resolve, reject }));
    },
    enqueue,
    async close() {
      closed = true;
      await flushing;
      await Promise.all(running);
    },
    get pending() {
      return queue.length;
    },
    stalledMs() {
      if (!flushing && running.size === 0) return 0;
      return Math.max(0, performance.now() - Math.max(busySince, lastFlushEnd));
    },
  };
}

/** Resolves when the flush ends or once it has run for `ms`, whichever comes first. */
function stalledAfter(flush: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([flush, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

/** Every statement of a flush shares its deadline: one still unanswered then is abandoned (Db.queryWithin). */
function withDeadline(db: Db, deadline: number): Queryable {
  return {
    query: (sql, params) => db.queryWithin(Math.max(1, deadline - performance.now()), sql, params),
    exec: (sql) => db.exec(sql),
  };
}

/**
 * Writes events with distinct ids. A row the store refuses (a value Postgres
 * cannot hold) must not take its batch down: bisect until it is alone, then keep
 * its bytes as a quarantined row so nothing signed is lost.
 */
async function writeEvents(
  store: Queryable,
  logger: Logger,
  locks: FlushLockSeed | undefined,
  events: NewInboxEvent[],
): Promise<Map<string, Outcome>> {
  const out = new Map<string, Outcome>();
  try {
    const { inserted, busy } = await insertCreatingPartitions(store, logger, events, locks);
    for (const e of events) {
      out.set(e.eventId, inserted.has(e.eventId) ? 'accepted' : busy?.has(e.eventId) ? new EventInFlightError(e.eventId) : 'duplicate');
    }
    return out;
  } catch (err) {
    if (!isDataError(err)) {
      const unavailable = new StoreUnavailableError(`inbox write failed: ${describeError(err)}`, { cause: err });
      for (const e of events) out.set(e.eventId, unavailable);
      return out;
    }
    if (events.length > 1) {
      const mid = Math.ceil(events.length / 2);
      for (const half of [events.slice(0, mid), events.slice(mid)]) {
        for (const [id, o] of await writeEvents(store, logger, locks, half)) out.set(id, o);
      }
      return out;
    }
    const e = events[0]!;
    out.set(e.eventId, await quarantineRefused(store, logger, locks, e, err));
    return out;
  }
}

/** Inserts the events; when their day has no partition yet, creates it (and the next days') and inserts again. */
async function insertCreatingPartitions(
  store: Queryable,
  logger: Logger,
  events: NewInboxEvent[],
  locks: FlushLockSeed | undefined,
): Promise<FlushWrite> {
  try {
    return await insertFlush(store, events, locks);
  } catch (err) {
    if (!isMissingPartition(err)) throw err;
    const created = await ensureInboxPartitions(store);
    logger.warn({ created }, 'a flush met a day without an inbox partition and created it: is the leader running retention?');
    return await insertFlush(store, events, locks);
  }
}

/** Keeps a row the store refused as a quarantined row of its own (its bytes, none of its parsed fields). */
async function quarantineRefused(
  store: Queryable,
  logger: Logger,
  locks: FlushLockSeed | undefined,
  e: NewInboxEvent,
  err: unknown,
): Promise<Outcome> {
  logger.warn({ event_id: e.eventId, err }, 'event refused by the store; keeping it as quarantined');
  const quarantined: NewInboxEvent = {
    ...e,
    status: 'quarantined',
    payloadJson: null,
    occurredAt: null,
    correspondenceId: null,
    lastError: `store refused the event: ${describeError(err)}`.slice(0, 1000),
  };
  try {
    const { inserted, busy } = await insertCreatingPartitions(store, logger, [quarantined], locks);
    if (busy?.has(e.eventId)) return new EventInFlightError(e.eventId);
    // The answer says what the store kept: a row of its own, quarantined (not the event as sent).
    return inserted.has(e.eventId) ? (e.status === 'quarantined' ? 'accepted' : 'quarantined') : 'duplicate';
  } catch (again) {
    return isDataError(again)
      ? new PostroomError('store_refused_event', `the store refused the event: ${describeError(again)}`, { cause: again })
      : new StoreUnavailableError(`inbox write failed: ${describeError(again)}`, { cause: again });
  }
}

/**
 * Ingress's sinks answer the request right here, inside the flush (ingress/accept.ts): one that throws must
 * not keep the rest of the batch from being told, nor stop the writer.
 */
function tell(logger: Logger, w: Waiter, o: Outcome): void {
  try {
    if (o instanceof Error) w.sink.reject(o);
    else w.sink.resolve(o);
  } catch (err) {
    logger.error({ event_id: w.event.eventId, err }, 'a waiter of the inbox writer threw on its outcome; the others are still told');
  }
}
