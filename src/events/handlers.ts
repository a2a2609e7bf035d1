import type { Queryable } from '../db/types.js';
import type { InboxSource } from '../inbox/types.js';
import type { Logger } from '../logging/logger.js';
import type { AnyKnownEvent, EventType, PostroomEvent, UnknownEvent } from './catalogue.js';

/**
 * What a handler gets besides the event. `Api` is the service API client's type
 * when one was given to createPostroom (`unknown` otherwise).
 */
export interface HandlerContext<Api = unknown> {
  /**
   * The database transaction in which this event's inbox row is marked
   * processed. Whatever the handler writes through it commits exactly once,
   * together with that row; if the handler throws, it is rolled back. Effects
   * outside this database (HTTP calls, e-mails) are at least once: key them by
   * `eventId`. Usable only until the handler returns.
   */
  tx: Queryable;
  /** A child logger bound to event_id and type. */
  logger: Logger;
  /** 1 on the first try; grows with every retry. */
  attempt: number;
  eventId: string;
  type: string;
  /** Where the row came from: a webhook delivery, the reconciler or a replay. */
  source: InboxSource;
  receivedAt: Date;
  /** Aborted when the handler times out or the worker stops at its deadline. */
  signal: AbortSignal;
  /** The service API client, when one was configured. */
  api: Api;
}

export type EventHandler<T extends EventType, Api = unknown> = (event: PostroomEvent<T>, ctx: HandlerContext<Api>) => void | Promise<void>;

/** Catch-all for event types the catalogue does not know (without one they are marked `skipped`). */
export type UnknownEventHandler<Api = unknown> = (event: UnknownEvent, ctx: HandlerContext<Api>) => void | Promise<void>;

/** Runs for every event, known or not, after the type's own handlers (the forwarder is one). */
export type EveryEventHandler<Api = unknown> = (event: AnyKnownEvent | UnknownEvent, ctx: HandlerContext<Api>) => void | Promise<void>;

/**
 * Handlers by event type; the key `*` is the catch-all for unknown types. A
 * type's value may be one handler or several (run in order, in one savepoint).
 */
export type HandlerMap<Api = unknown> = {
  [T in EventType]?: EventHandler<T, Api> | ReadonlyArray<EventHandler<T, Api>>;
} & {
  '*'?: UnknownEventHandler<Api>;
};
