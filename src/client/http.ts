import { SpanKind, SpanStatusCode, context, propagation, trace, tracer, type Span } from '../tracing/trace.js';
import type { Dispatcher } from 'undici';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging/logger.js';
import { createRedactor, type Redactor } from '../logging/redact.js';
import type { Metrics } from '../metrics/metrics.js';
import { API_CLIENT_DEFAULTS } from './defaults.js';
import { ApiError, codeForStatus, type ApiErrorCode } from './errors.js';
import { backoffDelay, type BackoffPolicy } from '../backoff.js';
import { DEFAULT_BACKOFF, RETRYABLE_STATUSES, parseRetryAfter } from './retry.js';
import { scopeFor, type OperationName } from './scopes.js';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface Timeouts {
  connectMs: number;
  headersMs: number;
  bodyMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = {
  connectMs: API_CLIENT_DEFAULTS.connectTimeoutMs,
  headersMs: API_CLIENT_DEFAULTS.headersTimeoutMs,
  bodyMs: API_CLIENT_DEFAULTS.bodyTimeoutMs,
};

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface TransportOptions {
  /** Origin plus any path prefix, without the /sender/v2 suffix. */
  baseUrl: string;
  apiKey: string;
  dispatcher: Dispatcher;
  timeouts: Timeouts;
  maxAttempts: number;
  deadlineMs: number;
  clock: Clock;
  sleep: Sleep;
  random: () => number;
  logger: Logger;
  metrics?: Metrics | undefined;
  backoff?: BackoffPolicy;
  userAgent: string;
}

export interface ApiRequest {
  operation: OperationName;
  method: HttpMethod;
  /** Relative to /sender/v2, ids already encoded. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Sent as Idempotency-Key; a POST is retried only when it has one. */
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON; undefined for an empty body. */
  body: unknown;
  attempts: number;
}

export interface Transport {
  send(request: ApiRequest): Promise<ApiResponse>;
  readonly origin: string;
}

export const API_PREFIX = '/sender/v2';

/**
 * Error codes of transport failures worth another attempt: the request may not
 * have reached the service, or its answer was lost on the way back. ENOTFOUND
 * is left out on purpose: a wrong host name does not fix itself in a second.
 */
const TRANSIENT_ERROR_CODES = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);
const TIMEOUT_ERROR_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

const MAX_ERROR_TEXT = 2000;

/** Splits the configured base into origin and path prefix, tolerating a base that already ends in /sender/v2. */
export function resolveBase(baseUrl: string): { origin: string; prefix: string } {
  const url = new URL(baseUrl);
  let prefix = url.pathname.replace(/\/+$/, '');
  if (prefix.endsWith(API_PREFIX)) prefix = prefix.slice(0, -API_PREFIX.length);
  return { origin: url.origin, prefix: `${prefix}${API_PREFIX}` };
}

function queryString(query: ApiRequest['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

type AttemptOutcome =
  | { kind: 'response'; status: number; headers: Record<string, string | string[] | undefined>; text: string }
  | { kind: 'failure'; code: ApiErrorCode; retryable: boolean; cause: unknown; detail: string };

/** What every attempt of a transport shares. */
interface TransportContext {
  options: TransportOptions;
  origin: string;
  backoff: BackoffPolicy;
  authorization: string;
  /** Scrubs the API key from anything that leaves the transport. */
  redactor: Redactor;
}

/**
 * One request with the retry policy around it: exponential backoff with full
 * jitter on transient failures, Retry-After honoured, all inside one overall
 * deadline. The API key is scrubbed from everything that leaves this function.
 */
export function createTransport(options: TransportOptions): Transport {
  const { origin, prefix } = resolveBase(options.baseUrl);
  const ctx: TransportContext = {
    options,
    origin,
    backoff: options.backoff ?? DEFAULT_BACKOFF,
    authorization: `Bearer ${options.apiKey}`,
    redactor: createRedactor([options.apiKey]),
  };
  const { logger, clock } = options;
  return {
    origin,
    async send(request) {
      const path = `${prefix}${request.path}${queryString(request.query)}`;
      // A POST without an Idempotency-Key might have been applied when its answer was lost; replaying it could send twice.
      const mayRetry = request.method !== 'POST' || request.idempotencyKey !== undefined;
      const deadline = clock.now() + options.deadlineMs;
      for (let attemptNo = 1; ; attemptNo++) {
        const outcome = await timedAttempt(ctx, request, path, deadline, attemptNo);
        if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) {
          logger.debug(
            { operation: request.operation, method: request.method, status: outcome.status, attempt: attemptNo },
            'service API call succeeded',
          );
          return { status: outcome.status, body: successBody(request, outcome, attemptNo), attempts: attemptNo };
        }
        const { delay, retryAfter } = retryDelayOrThrow(ctx, request, outcome, attemptNo, mayRetry, deadline);
        logger.warn(
          {
            operation: request.operation,
            method: request.method,
            attempt: attemptNo,
            delay_ms: delay,
            reason: outcome.kind === 'response' ? `status ${outcome.status}` : outcome.code,
            retry_after: retryAfter !== undefined,
          },
          'service API call failed; retrying',
        );
        try {
          await options.sleep(delay, request.signal);
        } catch (err) {
          throw new ApiError({
            code: 'aborted',
            message: `${request.operation}: aborted by the caller while waiting to retry`,
            operation: request.operation,
            attempts: attemptNo,
            cause: err,
          });
        }
      }
    },
  };
}

/** One attempt, cut off at the overall deadline (or by the caller's signal), counted in the metrics. */
async function timedAttempt(
  ctx: TransportContext,
  request: ApiRequest,
  path: string,
  deadline: number,
  attemptNo: number,
): Promise<AttemptOutcome> {
  // One client span per request sent, as the HTTP conventions have it: the operation, the status, never the URL's ids or a header.
  const parent = context.active();
  const span = tracer.startSpan(`${request.method} ${request.operation}`, { kind: SpanKind.CLIENT }, parent);
  try {
    const outcome = await context.with(trace.setSpan(parent, span), () => measuredAttempt(ctx, request, path, deadline));
    if (span.isRecording()) annotateAttempt(span, ctx, request, outcome, attemptNo);
    return outcome;
  } finally {
    span.end();
  }
}

function annotateAttempt(span: Span, ctx: TransportContext, request: ApiRequest, outcome: AttemptOutcome, attemptNo: number): void {
  const origin = new URL(ctx.origin);
  span.setAttributes({
    'http.request.method': request.method,
    'server.address': origin.hostname,
    'server.port': Number(origin.port || (origin.protocol === 'https:' ? 443 : 80)),
    'postroom.api.operation': request.operation,
    ...(attemptNo > 1 ? { 'http.request.resend_count': attemptNo - 1 } : {}),
  });
  if (outcome.kind === 'response') {
    span.setAttribute('http.response.status_code', outcome.status);
    if (outcome.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR, message: String(outcome.status) });
  } else {
    span.setAttribute('error.type', outcome.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.code });
  }
}

async function measuredAttempt(ctx: TransportContext, request: ApiRequest, path: string, deadline: number): Promise<AttemptOutcome> {
  const { clock, metrics } = ctx.options;
  const remaining = deadline - clock.now();
  const deadlineCtl = new AbortController();
  const timer = setTimeout(() => deadlineCtl.abort(), Math.max(1, remaining));
  const signal = request.signal ? AbortSignal.any([request.signal, deadlineCtl.signal]) : deadlineCtl.signal;
  const t0 = process.hrtime.bigint();
  let outcome: AttemptOutcome;
  try {
    outcome = await attempt(ctx, request, path, signal);
  } finally {
    clearTimeout(timer);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  metrics?.apiRequests.inc({
    operation: request.operation,
    status_class: outcome.kind === 'response' ? statusClass(outcome.status) : 'network',
  });
  metrics?.apiDuration.observe({ operation: request.operation }, seconds);
  return outcome;
}

async function attempt(ctx: TransportContext, request: ApiRequest, path: string, signal: AbortSignal): Promise<AttemptOutcome> {
  const { options } = ctx;
  const headers: Record<string, string> = {
    authorization: ctx.authorization,
    accept: 'application/json',
    'user-agent': options.userAgent,
  };
  let body: string | undefined;
  if (request.body !== undefined) {
    body = JSON.stringify(request.body);
    headers['content-type'] = 'application/json';
  }
  if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
  // traceparent, when an SDK registered a propagator: the service may join the trace.
  propagation.inject(context.active(), headers);
  try {
    const res = await options.dispatcher.request({
      origin: ctx.origin,
      path,
      method: request.method,
      headers,
      body: body ?? null,
      signal,
      headersTimeout: options.timeouts.headersMs,
      bodyTimeout: options.timeouts.bodyMs,
      // Our own loop decides about retries; undici must not replay a POST on its own.
      idempotent: false,
    });
    const text = await res.body.text();
    return { kind: 'response', status: res.statusCode, headers: res.headers, text };
  } catch (err) {
    return classifyFailure(ctx.redactor.text, err, signal, request.signal);
  }
}

/** The parsed body of a 2xx answer. */
function successBody(request: ApiRequest, outcome: { status: number; text: string }, attempts: number): unknown {
  try {
    return outcome.text === '' ? undefined : (JSON.parse(outcome.text) as unknown);
  } catch (err) {
    // Never quote the body: a create or rotate answer carries a secret.
    throw new ApiError({
      code: 'invalid_response',
      message: `${request.operation}: the service answered ${outcome.status} with a body that is not JSON`,
      operation: request.operation,
      status: outcome.status,
      attempts,
      requiredScope: scopeFor(request.operation),
      cause: err,
    });
  }
}

/** How long to wait before the next attempt; throws the call's error when there is to be none. */
function retryDelayOrThrow(
  ctx: TransportContext,
  request: ApiRequest,
  outcome: AttemptOutcome,
  attemptNo: number,
  mayRetry: boolean,
  deadline: number,
): { delay: number; retryAfter: number | undefined } {
  const { options } = ctx;
  const retryable = outcome.kind === 'failure' ? outcome.retryable : RETRYABLE_STATUSES.has(outcome.status);
  if (!retryable || !mayRetry || attemptNo >= options.maxAttempts) {
    const suffix = !retryable
      ? ''
      : !mayRetry
        ? ' (not retried: a POST without an Idempotency-Key might be applied twice)'
        : ` (gave up after ${attemptNo} attempts)`;
    throw errorFor(ctx, request, outcome, attemptNo, suffix);
  }
  const retryAfter = outcome.kind === 'response' ? parseRetryAfter(outcome.headers['retry-after'], options.clock.now()) : undefined;
  const delay = retryAfter ?? backoffDelay(attemptNo, options.random, ctx.backoff);
  if (options.clock.now() + delay >= deadline) {
    throw errorFor(
      ctx,
      request,
      outcome,
      attemptNo,
      ` (gave up after ${attemptNo} attempts: waiting ${delay} ms more would pass the ${options.deadlineMs} ms deadline)`,
    );
  }
  return { delay, retryAfter };
}

function classifyFailure(
  scrub: (text: string) => string,
  raw: unknown,
  attemptSignal: AbortSignal,
  callerSignal: AbortSignal | undefined,
): AttemptOutcome {
  const code = (raw as { code?: unknown } | null)?.code;
  const message = scrub(raw instanceof Error ? raw.message : String(raw));
  // The original error is not kept: a proxy or TLS layer may put request details into it, and the cause chain is logged.
  const err = Object.assign(new Error(message), {
    name: raw instanceof Error ? raw.name : 'Error',
    ...(typeof code === 'string' ? { code } : {}),
  });
  if (callerSignal?.aborted) return { kind: 'failure', code: 'aborted', retryable: false, cause: err, detail: 'aborted by the caller' };
  if (attemptSignal.aborted)
    return { kind: 'failure', code: 'timeout', retryable: false, cause: err, detail: 'the overall deadline passed' };
  if (typeof code === 'string' && TIMEOUT_ERROR_CODES.has(code))
    return { kind: 'failure', code: 'timeout', retryable: true, cause: err, detail: `${code}: ${message}` };
  const transient = typeof code === 'string' && TRANSIENT_ERROR_CODES.has(code);
  return {
    kind: 'failure',
    code: 'network_error',
    retryable: transient,
    cause: err,
    detail: typeof code === 'string' ? `${code}: ${message}` : message,
  };
}

function errorFor(ctx: TransportContext, request: ApiRequest, outcome: AttemptOutcome, attempts: number, suffix: string): ApiError {
  const scope = scopeFor(request.operation);
  const where = `${request.method} ${API_PREFIX}${request.path}`;
  if (outcome.kind === 'failure') {
    return new ApiError({
      code: outcome.code,
      message: `${request.operation}: ${where} to ${ctx.origin} failed: ${outcome.detail}${suffix}`,
      operation: request.operation,
      attempts,
      requiredScope: scope,
      cause: outcome.cause,
    });
  }
  const body = serviceBody(ctx.redactor, outcome.text);
  const code = codeForStatus(outcome.status);
  const said = serviceMessage(body);
  let message = `${request.operation}: ${where} answered ${outcome.status} (${code})`;
  if (code === 'insufficient_scope') {
    message += scope ? `: the API key lacks the scope ${scope} that this operation needs` : ': the API key is not allowed to do this';
  } else if (code === 'unauthorized') {
    message += ': the service refused the API key; check POSTROOM_API_KEY (or POSTROOM_API_KEY_FILE) and that the key is not revoked';
  }
  if (said) message += `; the service said: ${said}`;
  const retryAfterMs = parseRetryAfter(outcome.headers['retry-after'], ctx.options.clock.now());
  return new ApiError({
    code,
    message: ctx.redactor.text(`${message}${suffix}`),
    operation: request.operation,
    status: outcome.status,
    body,
    attempts,
    requiredScope: scope,
    retryAfterMs,
  });
}

/** An error answer's body for ApiError, with the API key scrubbed and long text cut. */
function serviceBody(redactor: Redactor, text: string): unknown {
  if (text === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    const clean = redactor.text(text);
    return clean.length > MAX_ERROR_TEXT ? `${clean.slice(0, MAX_ERROR_TEXT)}…` : clean;
  }
  // After parsing: `svc\u005fsandbox\u005f…` in the text is the key itself in the value.
  return redactor.deep(parsed);
}

function serviceMessage(body: unknown): string | undefined {
  if (typeof body === 'string') return body.slice(0, 300);
  if (!body || typeof body !== 'object') return undefined;
  const b = body as { error?: unknown; message?: unknown };
  const inner = b.error && typeof b.error === 'object' ? (b.error as { message?: unknown; code?: unknown }) : undefined;
  const msg = inner?.message ?? b.message ?? (typeof b.error === 'string' ? b.error : undefined);
  return typeof msg === 'string' ? msg.slice(0, 300) : undefined;
}
