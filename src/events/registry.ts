import { PostroomError } from '../errors.js';
import { isKnownEventType, type AnyKnownEvent, type EventType, type UnknownEvent } from './catalogue.js';
import type { EventHandler, EveryEventHandler, HandlerContext, HandlerMap, UnknownEventHandler } from './handlers.js';

/** A handler with its event type erased; the registry guarantees the pairing. */
export type BoundHandler<Api = unknown> = (event: AnyKnownEvent | UnknownEvent, ctx: HandlerContext<Api>) => void | Promise<void>;

export interface HandlerRegistry<Api = unknown> {
  on<T extends EventType>(type: T, handler: EventHandler<T, Api>): void;
  onUnknown(handler: UnknownEventHandler<Api>): void;
  onEvery(handler: EveryEventHandler<Api>): void;
  /** Registers every entry of a handler map (a `--handlers` module's default export, for one). */
  use(map: HandlerMap<Api>): void;
  /** What runs for one event, in order; empty when nothing is registered for it. */
  handlersFor(kind: 'known' | 'unknown', type: string): ReadonlyArray<BoundHandler<Api>>;
  /** Which types something consumes: the reconciler closes gaps of other types as not consumed. */
  consumption(): Consumption;
}

export interface Consumption {
  /** Known types with a handler of their own. */
  types: string[];
  /** A handler runs for every event (the forwarder, onEvery). */
  everyType: boolean;
  /** A catch-all runs for types the catalogue does not know. */
  unknownTypes: boolean;
}

export function createHandlerRegistry<Api = unknown>(): HandlerRegistry<Api> {
  const by_type = new Map<string, BoundHandler<Api>[]>();
  const unknown: BoundHandler<Api>[] = [];
  const every: BoundHandler<Api>[] = [];

  const requireFunction = (what: string, fn: unknown): void => {
    if (typeof fn !== 'function')
      throw new PostroomError('handler_invalid', `The handler for ${what} must be a function, got ${typeof fn}.`);
  };

  const registry: HandlerRegistry<Api> = {
    on(type, handler) {
      // Types are checked at run time too: handler modules are often plain JavaScript.
      if (!isKnownEventType(type)) {
        throw new PostroomError(
          'unknown_event_type',
          `"${String(type)}" is not an event type the service sends; known types are listed in docs/events.md. Use onUnknown (or the "*" key) for types postroom does not know yet.`,
          {
            details: { type },
          },
        );
      }
      requireFunction(type, handler);
      const list = by_type.get(type) ?? [];
      list.push(handler as BoundHandler<Api>);
      by_type.set(type, list);
    },
    onUnknown(handler) {
      requireFunction('unknown event types', handler);
      unknown.push(handler as BoundHandler<Api>);
    },
    onEvery(handler) {
      requireFunction('every event', handler);
      every.push(handler as BoundHandler<Api>);
    },
    use(map) {
      if (typeof map !== 'object' || map === null)
        throw new PostroomError('handler_invalid', 'A handler map must be an object keyed by event type.');
      for (const [key, value] of Object.entries(map)) {
        if (value === undefined) continue;
        if (key === '*') {
          registry.onUnknown(value as UnknownEventHandler<Api>);
          continue;
        }
        for (const h of Array.isArray(value) ? value : [value]) registry.on(key as EventType, h as EventHandler<EventType, Api>);
      }
    },
    consumption() {
      return { types: [...by_type.keys()].sort(), everyType: every.length > 0, unknownTypes: unknown.length > 0 };
    },
    handlersFor(kind, type) {
      const own = kind === 'known' ? (by_type.get(type) ?? []) : unknown;
      return own.length === 0 ? every : every.length === 0 ? own : [...own, ...every];
    },
  };
  return registry;
}
