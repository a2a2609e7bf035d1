import { request, type Dispatcher as HttpDispatcher } from 'undici';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { sign, type SignedPayloadScheme } from '../signature/index.js';
import type { Activity, Timers } from './activity.js';
import type { Delivery, DeliveryStore } from './deliveries.js';
import type { Faults } from './faults.js';
import type { Endpoint } from './state.js';

export interface FaultLogEntry {
  delivery_id: string;
  event_id: string;
  endpoint_id: string;
  /** 0 for decisions taken before the first attempt. */
  attempt: number;
  fault: 'held_back' | 'delayed' | 'drop' | 'duplicate' | 'failure_window' | 'forced_failure';
  delay_ms?: number;
}

export interface DispatcherOptions {
  deliveries: DeliveryStore;
  endpoint(endpointId: string): Endpoint | undefined;
  faults: Faults;
  clock: Clock;
  logger: Logger;
  activity: Activity;
  timers: Timers;
  /** Waits before attempts 2, 3, …; attempts = length + 1. */
  retryScheduleMs: readonly number[];
  attemptTimeoutMs: number;
  scheme: SignedPayloadScheme;
  http: HttpDispatcher;
  maxConcurrency: number;
  userAgent: string;
}

export interface Dispatcher {
  enqueue(d: Delivery): void;
  faultLog(): FaultLogEntry[];
  readonly inFlight: number;
  close(): Promise<void>;
}

const FAULT_LOG_SIZE = 10_000;
const ERROR_SNIPPET = 200;

const FAULT_ERRORS: Record<'drop' | 'failure_window' | 'forced_failure', string> = {
  drop: 'sandbox fault: the request was lost in transit (drop)',
  failure_window: 'sandbox fault: connection refused (failure window)',
  forced_failure: 'sandbox fault: connection refused (forced failure)',
};

/**
 * Sends each delivery with a per-attempt time-out, retries on the schedule, and ends
 * it delivered or dead. Attempts run FIFO under a concurrency cap; every attempt is
 * re-signed with the endpoint's current secret and a fresh timestamp over the same bytes.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { faults, logger, activity, timers } = options;
  const ready: Delivery[] = [];
  let head = 0;
  let inFlight = 0;
  let closed = false;
  const controllers = new Set<AbortController>();
  const running = new Set<Promise<void>>();
  const log: FaultLogEntry[] = [];
  const note = (d: Delivery, attempt: number, fault: FaultLogEntry['fault'], delayMs?: number): void =>
    noteFault(log, d, attempt, fault, delayMs);
  const finish = (d: Delivery, status: 'delivered' | 'dead'): void => finishDelivery(options, d, status);

  const pump = (): void => {
    while (!closed && inFlight < options.maxConcurrency && head < ready.length) {
      const d = ready[head++]!;
      inFlight++;
      const p: Promise<void> = attempt(d)
        .catch((err: unknown) => logger.error({ err, delivery_id: d.deliveryId }, 'sandbox dispatcher: unexpected error'))
        .finally(() => {
          inFlight--;
          running.delete(p);
          pump();
        });
      running.add(p);
    }
    if (head > 1024 && head * 2 > ready.length) {
      ready.splice(0, head);
      head = 0;
    }
  };

  const schedule = (d: Delivery, delayMs: number): void => {
    if (closed) return;
    if (delayMs <= 0) {
      ready.push(d);
      pump();
    } else {
      timers.set(() => {
        ready.push(d);
        pump();
      }, delayMs);
    }
  };

  async function attempt(d: Delivery): Promise<void> {
    if (closed) return;
    const endpoint = options.endpoint(d.endpointId);
    if (!endpoint) {
      d.lastError = 'endpoint deleted before the event could be delivered';
      finish(d, 'dead');
      return;
    }
    const n = ++d.attempts;
    const fault = faults.attemptFault(d.seq, n, d.endpointId);
    let error: string | undefined;
    if (fault) {
      note(d, n, fault);
      error = FAULT_ERRORS[fault];
    } else {
      error = await send(options, d, endpoint, controllers, () => closed);
      if (closed) return;
      if (error === undefined && faults.duplicate(d.seq, n)) {
        note(d, n, 'duplicate');
        error = 'sandbox fault: the 2xx reply was lost, so the event is sent again (duplicate)';
      }
    }
    if (error === undefined) {
      finish(d, 'delivered');
      return;
    }
    d.lastError = error;
    const wait = options.retryScheduleMs[n - 1];
    if (wait === undefined) {
      finish(d, 'dead');
      return;
    }
    const jitter = faults.jitter(d.seq, n + 1);
    if (jitter > 0) note(d, n + 1, 'delayed', jitter);
    schedule(d, wait + jitter);
  }

  return {
    enqueue(d) {
      activity.begin();
      const first = faults.firstDelay(d.seq);
      if (first.heldBack) note(d, 0, 'held_back', first.delayMs);
      else if (first.delayMs > 0) note(d, 1, 'delayed', first.delayMs);
      schedule(d, first.delayMs);
    },
    faultLog: () => log.slice(),
    get inFlight() {
      return inFlight;
    },
    async close() {
      closed = true;
      for (const ac of controllers) ac.abort();
      await Promise.allSettled([...running]);
    },
  };
}

function noteFault(log: FaultLogEntry[], d: Delivery, attempt: number, fault: FaultLogEntry['fault'], delayMs?: number): void {
  if (log.length >= FAULT_LOG_SIZE) log.shift();
  log.push({
    delivery_id: d.deliveryId,
    event_id: d.eventId,
    endpoint_id: d.endpointId,
    attempt,
    fault,
    ...(delayMs === undefined ? {} : { delay_ms: delayMs }),
  });
}

/** Ends a delivery delivered or dead. */
function finishDelivery(options: DispatcherOptions, d: Delivery, status: 'delivered' | 'dead'): void {
  const { clock, deliveries, activity, logger } = options;
  if (status === 'delivered') {
    d.deliveredAt = clock.now();
    d.lastError = '';
  }
  deliveries.setStatus(d, status);
  activity.end();
  if (status === 'dead')
    logger.info(
      { delivery_id: d.deliveryId, event_id: d.eventId, endpoint_id: d.endpointId, attempts: d.attempts, last_error: d.lastError },
      'sandbox delivery dead',
    );
  else
    logger.debug(
      { delivery_id: d.deliveryId, event_id: d.eventId, endpoint_id: d.endpointId, attempts: d.attempts },
      'sandbox delivery delivered',
    );
}

/** One signed attempt with its time-out; undefined when the receiver answered 2xx, else what went wrong. */
async function send(
  options: DispatcherOptions,
  d: Delivery,
  endpoint: Endpoint,
  controllers: Set<AbortController>,
  closed: () => boolean,
): Promise<string | undefined> {
  const body = d.event!.body;
  const timestamp = Math.floor(options.clock.now() / 1000);
  const ac = new AbortController();
  controllers.add(ac);
  const timer = setTimeout(() => ac.abort(), options.attemptTimeoutMs);
  try {
    const res = await request(endpoint.url, {
      method: 'POST',
      dispatcher: options.http,
      signal: ac.signal,
      headersTimeout: options.attemptTimeoutMs,
      bodyTimeout: options.attemptTimeoutMs,
      headers: {
        'content-type': 'application/json',
        'user-agent': options.userAgent,
        'x-service-signature': sign({ secret: endpoint.secret, body, timestamp, scheme: options.scheme }),
        'x-service-event-id': d.eventId,
        'x-service-event-type': d.eventType,
      },
      body,
    });
    if (res.statusCode >= 200 && res.statusCode < 300) {
      await res.body.dump();
      return undefined;
    }
    const text = (await res.body.text().catch(() => '')).replace(/\s+/g, ' ').trim().slice(0, ERROR_SNIPPET);
    return `HTTP ${res.statusCode}${text ? `: ${text}` : ''}`;
  } catch (err) {
    if (ac.signal.aborted)
      return closed() ? 'sandbox stopped during the attempt' : `timeout: no reply within ${options.attemptTimeoutMs} ms`;
    const code = (err as { code?: string }).code;
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
      return `timeout: no reply within ${options.attemptTimeoutMs} ms`;
    return `connection error: ${[cause ?? code, describeError(err)].filter(Boolean).join(' ')}`.slice(0, 300);
  } finally {
    clearTimeout(timer);
    controllers.delete(ac);
  }
}
