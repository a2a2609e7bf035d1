import { Agent, request, type Dispatcher } from 'undici';
import type { EveryEventHandler } from '../events/handlers.js';
import { sign } from '../signature/index.js';
import { VERSION } from '../version.js';
import { backoffDelay, type BackoffPolicy } from '../backoff.js';
import { withEqualJitter } from './backoff.js';
import { ForwardError } from './errors.js';

export interface ForwarderOptions {
  /** The organisation's internal endpoint (POSTROOM_FORWARD_URL). */
  url: string;
  /** Signs each forwarded body like the service does (POSTROOM_FORWARD_SECRET). */
  secret: string;
  /** Per request (POSTROOM_FORWARD_TIMEOUT_MS). */
  timeoutMs: number;
  /** Requests per handler call before the event goes down the worker's retry path (default 3). */
  attempts?: number;
  /** Pause between those requests (default 200 ms doubling, at most 5 s). */
  retryBackoff?: BackoffPolicy;
  /** Injected by tests; defaults to an Agent owned (and closed) by the forwarder. */
  dispatcher?: Dispatcher;
  random?: () => number;
}

export interface Forwarder {
  /** Register with onEvery: every verified event, known types or not. */
  handler: EveryEventHandler;
  close(): Promise<void>;
}

/** Statuses worth trying again at once; any other non-2xx goes to the worker's slower retry path. */
const RETRY_NOW = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * The built-in handler for cores not written in Node: POSTs each verified event
 * to an internal URL, signed with an internal secret in the service's own header
 * format (X-Service-Signature: t=…,v1=…), so the core verifies one thing and
 * receives only events postroom verified. Delivery is at least once: the core
 * should de-duplicate on X-Service-Event-Id. A non-2xx after the retries throws,
 * and the event is retried with backoff and finally goes dead like any other.
 */
export function createForwarder(options: ForwarderOptions): Forwarder {
  const owned = options.dispatcher ? undefined : new Agent({ connectTimeout: options.timeoutMs, keepAliveTimeout: 10_000 });
  const dispatcher = options.dispatcher ?? owned!;
  const attempts = options.attempts ?? 3;
  const backoff = withEqualJitter(options.retryBackoff ?? { baseDelayMs: 200, maxDelayMs: 5000 });
  const random = options.random ?? Math.random;

  async function postOnce(body: string, headers: Record<string, string>, signal: AbortSignal): Promise<{ status: number; text: string }> {
    const res = await request(options.url, {
      method: 'POST',
      body,
      headers: { ...headers, 'x-service-signature': sign({ secret: options.secret, body }) },
      dispatcher,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
    });
    const text = (await res.body.text()).slice(0, 300);
    return { status: res.statusCode, text };
  }

  const handler: EveryEventHandler = async (event, ctx) => {
    const body = JSON.stringify({ event_id: event.event_id, type: event.type, at: event.at, data: event.data });
    const headers = {
      'content-type': 'application/json',
      'user-agent': `postroom/${VERSION}`,
      'x-service-event-id': event.event_id,
      'x-service-event-type': event.type,
      'x-postroom-attempt': String(ctx.attempt),
      'x-postroom-source': ctx.source,
    };
    let last = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) await pause(backoffDelay(attempt - 1, random, backoff), ctx.signal);
      try {
        const res = await postOnce(body, headers, ctx.signal);
        if (res.status >= 200 && res.status < 300) return;
        last = `HTTP ${res.status}${res.text ? `: ${res.text}` : ''}`;
        if (!RETRY_NOW.has(res.status)) break;
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        last = (err as Error).message;
      }
      ctx.logger.debug({ attempt, err: last }, 'forward attempt failed');
    }
    throw new ForwardError(`forwarding to ${redact(options.url)} failed: ${last}`, { url: redact(options.url), attempts });
  };

  return {
    handler,
    async close() {
      await owned?.close();
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** URLs may carry credentials; logs and errors show origin and path only. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid url)';
  }
}
