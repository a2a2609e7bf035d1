import type { Db, Queryable } from '../db/types.js';
import { describeError, PostroomError, StoreUnavailableError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { ensureInboxPartitions, insertInboxBatch, isDataError, isMissingPartition } from './insert-queries.js';
import type { InsertOutcome, NewInboxEvent } from './types.js';

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
  onFlush?: (stats: FlushStats) => void;
}

interface Waiter {
  event: NewInboxEvent;
  sink: WriteSink;
}

type Outcome = InsertOutcome | Error;

/**
 * Group commit: concurrent requests share one multi-row INSERT and one commit.
 * One flush runs at a time; while it runs, new rows queue and go in the next
 * flush, so batches grow with load and a lone request is written at once (no timer).
 */
export function createInboxWriter(options: InboxWriterOptions): InboxWriter {
  const queue: Waiter[] = [];
  let flushing: Promise<void> | undefined;
  let closed = false;
  // Progress, for stalledMs(): when work last began waiting on an idle writer, and when a flush last finished.
  let busySince = 0;
  let lastFlushEnd = 0;
  let flushDeadline = 0;
  const { flushTimeoutMs } = options;
  const flushStore = flushTimeoutMs === undefined ? options.db : withDeadline(options.db, () => flushDeadline);

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
    const started = performance.now();
    if (flushTimeoutMs !== undefined) flushDeadline = started + flushTimeoutMs;
    const outcomes = await writeEvents(flushStore, options.logger, events);
    // Before the waiters are told: ingress answers its requests while they are (the flush's time is the store's).
    const finished = performance.now();
    let inserted = 0;
    let ok = true;
    let progressed = false;
    for (const [id, w] of firsts) {
      const o = outcomes.get(id)!;
      // An abandoned flush (store unavailable past its deadline) did not finish: it is no progress.
      if (!(o instanceof StoreUnavailableError)) progressed = true;
      if (o instanceof Error) ok = false;
      else if (o !== 'duplicate') inserted++;
      tell(options.logger, w, o);
    }
    if (progressed) lastFlushEnd = finished;
    for (const w of repeats ?? []) {
      const o = outcomes.get(w.event.eventId)!;
      tell(options.logger, w, o instanceof Error ? o : 'duplicate');
    }
    options.onFlush?.({ rows: batch.length, inserted, durationMs: finished - started, ok });
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length > 0) await writeBatch(queue.splice(0, options.maxBatch));
    } finally {
      flushing = undefined;
    }
  }

  function enqueue(event: NewInboxEvent, sink: WriteSink): void {
    if (closed) {
      sink.reject(new StoreUnavailableError('inbox writer is closed (shutting down)'));
      return;
    }
    if (!flushing) busySince = performance.now();
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
    },
    get pending() {
      return queue.length;
    },
    stalledMs() {
      if (!flushing) return 0;
      return Math.max(0, performance.now() - Math.max(busySince, lastFlushEnd));
    },
  };
}

/** Every statement of a flush shares its deadline: one still unanswered then is abandoned (Db.queryWithin). */
function withDeadline(db: Db, deadline: () => number): Queryable {
  return {
    query: (sql, params) => db.queryWithin(Math.max(1, deadline() - performance.now()), sql, params),
    exec: (sql) => db.exec(sql),
    ...(db.copyInWithin
      ? { copyIn: (sql: string, data: Buffer) => db.copyInWithin!(Math.max(1, deadline() - performance.now()), sql, data) }
      : {}),
  };
}

/**
 * Writes events with distinct ids. A row the store refuses (a value Postgres
 * cannot hold) must not take its batch down: bisect until it is alone, then keep
 * its bytes as a quarantined row so nothing signed is lost.
 */
async function writeEvents(store: Queryable, logger: Logger, events: NewInboxEvent[]): Promise<Map<string, Outcome>> {
  const out = new Map<string, Outcome>();
  try {
    const inserted = await insertCreatingPartitions(store, logger, events);
    for (const e of events) out.set(e.eventId, inserted.has(e.eventId) ? 'accepted' : 'duplicate');
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
        for (const [id, o] of await writeEvents(store, logger, half)) out.set(id, o);
      }
      return out;
    }
    const e = events[0]!;
    out.set(e.eventId, await quarantineRefused(store, logger, e, err));
    return out;
  }
}

/** Inserts the events; when their day has no partition yet, creates it (and the next days') and inserts again. */
async function insertCreatingPartitions(store: Queryable, logger: Logger, events: NewInboxEvent[]): Promise<Set<string>> {
  try {
    return await insertInboxBatch(store, events);
  } catch (err) {
    if (!isMissingPartition(err)) throw err;
    const created = await ensureInboxPartitions(store);
    logger.warn({ created }, 'a flush met a day without an inbox partition and created it: is the leader running retention?');
    return await insertInboxBatch(store, events);
  }
}

/** Keeps a row the store refused as a quarantined row of its own (its bytes, none of its parsed fields). */
async function quarantineRefused(store: Queryable, logger: Logger, e: NewInboxEvent, err: unknown): Promise<Outcome> {
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
    const inserted = await insertCreatingPartitions(store, logger, [quarantined]);
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
