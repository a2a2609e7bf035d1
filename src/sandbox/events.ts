import type { Clock } from '../clock.js';
import type { EventType, Plane } from './catalogue.js';
import type { IdFactory } from './ids.js';
import type { SandboxEvent } from './state.js';

export interface EmitOptions {
  /** Only endpoints of this plane receive the event. */
  plane: Plane;
  correspondenceId?: string | undefined;
  /** Send only to this endpoint, whatever it subscribes to (webhook.test). */
  endpointId?: string;
  /** The instant of the change that fires the event (epoch ms), so resource and event agree; default now. */
  at?: number;
}

export interface EventLog {
  emit(type: EventType, data: Record<string, unknown>, options: EmitOptions): SandboxEvent;
  get(eventId: string): SandboxEvent | undefined;
  list(): readonly SandboxEvent[];
  readonly size: number;
}

/**
 * Every event the sandbox generates, in order, kept so tests can prove none was lost.
 * `onEvent` fans each one out to the endpoints that should receive it.
 */
export function createEventLog(deps: {
  clock: Clock;
  ids: IdFactory;
  onEvent: (event: SandboxEvent, options: EmitOptions) => void;
}): EventLog {
  const events: SandboxEvent[] = [];
  const byId = new Map<string, SandboxEvent>();
  return {
    emit(type, data, options) {
      const event_id = deps.ids.next('evt');
      const at = new Date(options.at ?? deps.clock.now()).toISOString();
      const body = Buffer.from(JSON.stringify({ event_id, type, at, data }), 'utf8');
      const event: SandboxEvent = { event_id, type, at, data, correspondenceId: options.correspondenceId, plane: options.plane, body };
      events.push(event);
      byId.set(event_id, event);
      deps.onEvent(event, options);
      return event;
    },
    get: (id) => byId.get(id),
    list: () => events,
    get size() {
      return events.length;
    },
  };
}
