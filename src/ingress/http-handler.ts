import type { IncomingMessage, ServerResponse } from 'node:http';
import getRawBody from 'raw-body';
import type { Logger } from '../logging/logger.js';
import type { HotCounterChild, HotHistogramChild } from '../metrics/hot.js';
import { createAckLagRecorder, type AckOutcome } from '../metrics/lag.js';
import type { Metrics } from '../metrics/metrics.js';
import {
  ATTR,
  MESSAGING_SYSTEM,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  propagation,
  traceparentOf,
  tracer,
  type Span,
} from '../tracing/trace.js';
import { flushBeingAnswered } from '../inbox/group-commit.js';
import type { AcceptOutcome, IngressCore } from './accept.js';

export interface WebhookHandlerOptions {
  core: IngressCore;
  maxBodyBytes: number;
  logger: Logger;
  metrics?: Metrics | undefined;
}

/**
 * Handles one POST; `endpointId` is set for /webhooks/{endpoint_id}. Plain Node request and response.
 * Answers through `res` and never throws: no promise to await, so none to make per request.
 */
export type WebhookHandler = (
  req: IncomingMessage & { rawBody?: unknown; body?: unknown },
  res: ServerResponse,
  endpointId: string | undefined,
) => void;

export const ENDPOINT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The answers that happen thousands of times a second, built once: a string body
 * goes out in the same write as the head (Node joins them), where a Buffer body
 * makes a second chunk and a writev; and a flat header list skips building and
 * spreading an object per answer.
 */
const CANNED = Object.fromEntries(
  (['accepted', 'duplicate', 'quarantined'] as const).map((status) => {
    const body = `{"status":"${status}"}`;
    return [status, { body, headers: ['Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(body))] }];
  }),
) as Record<'accepted' | 'duplicate' | 'quarantined', { body: string; headers: string[] }>;

function sendCanned(res: ServerResponse, status: keyof typeof CANNED): void {
  if (res.headersSent) return;
  const canned = CANNED[status];
  res.writeHead(200, canned.headers);
  res.end(canned.body);
}

export function sendJson(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

export function errorBody(code: string, message: string) {
  return { error: { code, message } };
}

/**
 * The webhook path from request to answer, with no framework: the Express router
 * and the standalone server both call it. It reads the body itself, byte-limited,
 * verifies before parsing (in the core), and answers only what is true.
 */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  const { core, logger } = options;
  const rec = createOutcomeRecorder(options.metrics);
  let warnedPreParsed = false;

  /** Once the body's exact bytes are in hand: answered from inside the core (for a stored event, inside its flush). */
  const accept = (
    req: IncomingMessage,
    res: ServerResponse,
    endpointId: string | undefined,
    body: Buffer,
    startedAt: number,
    span: Span,
  ): void => {
    if (span.isRecording()) span.setAttribute(ATTR.bodySize, body.length);
    core.accept({ rawBody: body, headers: req.headers, endpointId, traceContext: traceparentOf(span) }, (outcome) => {
      try {
        respond(rec, res, outcome, startedAt, span);
      } catch (err) {
        // A throw here must not leave the sender waiting until its time-out.
        logger.error({ err }, 'answering a webhook failed; closing its connection');
        res.destroy();
      }
    });
  };

  const handle = (req: Parameters<WebhookHandler>[0], res: ServerResponse, endpointId: string | undefined, span: Span): void => {
    const startedAt = performance.now();
    if (endpointId !== undefined && !ENDPOINT_ID.test(endpointId)) {
      rec.record('bad_request', 'endpoint_id', startedAt, span);
      sendJson(res, 404, errorBody('unknown_endpoint', 'No webhook route for that endpoint id.'));
      return;
    }
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity') {
      rec.record('bad_request', 'content_encoding', startedAt, span);
      sendJson(res, 415, errorBody('unsupported_content_encoding', 'Send the body uncompressed: the signature covers the exact bytes.'));
      return;
    }

    if (Buffer.isBuffer(req.rawBody)) {
      accept(req, res, endpointId, req.rawBody, startedAt, span);
      return;
    }
    if (req.readableEnded || req.body !== undefined) {
      // Another body parser already drained the stream: the exact bytes are gone.
      if (!warnedPreParsed) {
        warnedPreParsed = true;
        logger.error(
          'A body parser ran before the postroom webhook router and consumed the raw body, so signatures cannot be verified. ' +
            'Mount the postroom router before express.json(), or use express.json({ verify: captureRawBody }).',
        );
      }
      rec.record('unavailable', 'raw_body_consumed', startedAt, span);
      sendJson(
        res,
        500,
        errorBody('raw_body_unavailable', 'Server misconfiguration: the raw body was consumed before signature verification.'),
      );
      return;
    }
    // raw-body's callback form: its promise form made a promise, an await and a microtask turn per request.
    getRawBody(req, { length: req.headers['content-length'], limit: options.maxBodyBytes }, (err, body) => {
      // Called from the request stream's events: a throw here would reach the process, not the sender.
      try {
        if (err) bodyUnreadable(rec, options.maxBodyBytes, req, res, err, startedAt, span);
        else accept(req, res, endpointId, body, startedAt, span);
      } catch (thrown) {
        failed(res, thrown, span);
      }
    });
  };

  /** Whatever throws on the way in (a bad header value, a bug) closes that connection rather than the process. */
  const failed = (res: ServerResponse, err: unknown, span: Span): void => {
    logger.error({ err }, 'a webhook request failed before it could be answered; closing its connection');
    res.destroy();
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'failed before it could be answered' });
    span.end();
  };

  return (req, res, endpointId) => {
    const span = startRequestSpan(req, endpointId);
    try {
      handle(req, res, endpointId, span);
    } catch (err) {
      failed(res, err, span);
    }
  };
}

/** The ingress metrics a handler keeps: requests and acknowledgement times by outcome, secret matches, clock skew. */
interface OutcomeRecorder {
  /** Counts the request's outcome and ends its span: called once per request, as it is answered. */
  record(outcome: string, reason: string, startedAt: number, span: Span): void;
  countSecret(label: string): void;
  observeSkew(seconds: number): void;
  observeAge(outcome: AckOutcome, type: string, signedAgeSeconds: number, occurredAgeSeconds: number): void;
}

function createOutcomeRecorder(metrics: Metrics | undefined): OutcomeRecorder {
  // Hot children (src/metrics/hot.ts): prom-client's own inc()/observe() hash the labels on every call.
  // Looked up by outcome alone on the paths every delivery takes (no reason), so no key is built for them.
  const children = new Map<string, { requests: HotCounterChild; ack: HotHistogramChild }>();
  const secretChildren = new Map<string, HotCounterChild>();
  const skew = metrics?.clockSkew.hot();
  const skewAbs = metrics?.clockSkewAbs.hot();
  const lag = metrics && createAckLagRecorder(metrics.ackAge);
  return {
    record(outcome, reason, startedAt, span) {
      endRequestSpan(span, outcome, reason);
      if (!metrics) return;
      const key = reason === '' ? outcome : `${outcome}\u0000${reason}`;
      let c = children.get(key);
      if (!c) {
        c = { requests: metrics.ingressRequests.hot({ outcome, reason }), ack: metrics.ackDuration.hot({ outcome }) };
        children.set(key, c);
      }
      c.requests.inc();
      c.ack.observe((performance.now() - startedAt) / 1000);
    },
    countSecret(label) {
      if (!metrics) return;
      let c = secretChildren.get(label);
      if (!c) secretChildren.set(label, (c = metrics.secretMatches.hot({ secret: label })));
      c.inc();
    },
    observeSkew(seconds) {
      skew?.set(seconds);
      skewAbs?.observe(Math.abs(seconds));
    },
    observeAge(outcome, type, signedAgeSeconds, occurredAgeSeconds) {
      lag?.observe(outcome, type, signedAgeSeconds, occurredAgeSeconds);
    },
  };
}

/** The answer for an outcome; called by the core once the outcome is true (for a stored event, inside its flush). */
function respond(rec: OutcomeRecorder, res: ServerResponse, outcome: AcceptOutcome, startedAt: number, span: Span): void {
  if (span.isRecording()) annotateStored(span, outcome);
  switch (outcome.kind) {
    case 'accepted':
    case 'duplicate':
      rec.countSecret(outcome.secretLabel);
      rec.observeSkew(outcome.skewSeconds);
      rec.observeAge(outcome.kind, outcome.type, outcome.signedAgeSeconds, outcome.occurredAgeSeconds);
      rec.record(outcome.kind, '', startedAt, span);
      sendCanned(res, outcome.kind);
      return;
    case 'quarantined': {
      rec.countSecret(outcome.secretLabel);
      rec.observeSkew(outcome.skewSeconds);
      const status = outcome.duplicate ? 'duplicate' : 'quarantined';
      rec.observeAge(status, outcome.type, outcome.signedAgeSeconds, outcome.occurredAgeSeconds);
      rec.record(status, '', startedAt, span);
      sendCanned(res, status);
      return;
    }
    case 'invalid_signature':
      if (outcome.skewSeconds !== undefined && outcome.reason === 'timestamp_outside_window') rec.observeSkew(outcome.skewSeconds);
      rec.record('invalid_signature', outcome.reason, startedAt, span);
      sendJson(res, 401, errorBody(outcome.reason, 'Signature verification failed.'));
      return;
    case 'mismatched':
      rec.record('mismatched', outcome.field, startedAt, span);
      sendJson(
        res,
        400,
        errorBody(
          `${outcome.field}_mismatch`,
          `The X-Service-Event-${outcome.field === 'type' ? 'Type' : 'Id'} header does not match the signed body.`,
        ),
      );
      return;
    case 'unavailable':
      rec.record('unavailable', outcome.reason, startedAt, span);
      sendJson(res, 503, errorBody('store_unavailable', 'The event could not be stored durably; retry later.'), {
        'Retry-After': String(outcome.retryAfterSeconds),
      });
      return;
  }
}

function bodyUnreadable(
  rec: OutcomeRecorder,
  maxBodyBytes: number,
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  startedAt: number,
  span: Span,
): void {
  const type = (err as { type?: string }).type;
  if (type === 'entity.too.large') {
    rec.record('too_large', '', startedAt, span);
    sendJson(res, 413, errorBody('payload_too_large', `Body exceeds the ${maxBodyBytes}-byte limit (POSTROOM_MAX_BODY_BYTES).`), {
      Connection: 'close',
    });
    return;
  }
  rec.record('bad_request', type ?? 'read_error', startedAt, span);
  // A client that went away gets nothing; one that sent a bad length gets a 400.
  if (!req.destroyed) sendJson(res, 400, errorBody('bad_request', 'The request body could not be read.'));
}

/**
 * The request's span: a server span, the child of a trace the sender propagated (W3C `traceparent`, when an
 * SDK registered a propagator). With no SDK this is the API's no-op span, and nothing is set on it.
 */
function startRequestSpan(req: IncomingMessage, endpointId: string | undefined): Span {
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer.startSpan('POST /webhooks', { kind: SpanKind.SERVER }, parent);
  if (span.isRecording()) {
    span.setAttributes({
      [ATTR.messagingSystem]: MESSAGING_SYSTEM,
      [ATTR.operationType]: 'receive',
      [ATTR.operationName]: 'webhook',
      [ATTR.destination]: endpointId === undefined ? '/webhooks' : '/webhooks/{endpoint_id}',
      'http.request.method': 'POST',
      'http.route': endpointId === undefined ? '/webhooks' : '/webhooks/:endpoint_id',
      ...(endpointId !== undefined && ENDPOINT_ID.test(endpointId) ? { 'postroom.endpoint.id': endpointId } : {}),
    });
  }
  return span;
}

/** What the answer to a stored delivery says: the event's id and type, and the flush that committed it, linked. */
function annotateStored(span: Span, outcome: AcceptOutcome): void {
  if (outcome.kind !== 'accepted' && outcome.kind !== 'duplicate' && outcome.kind !== 'quarantined') return;
  span.setAttributes({ [ATTR.messageId]: outcome.eventId, [ATTR.eventType]: outcome.type, 'postroom.signature.result': 'verified' });
  // The answer runs inside the flush that committed the row.
  const flush = flushBeingAnswered();
  if (flush) span.addLink({ context: flush.spanContext(), attributes: { 'postroom.link': 'committed_in' } });
}

function endRequestSpan(span: Span, outcome: string, reason: string): void {
  if (span.isRecording()) {
    span.setAttribute(ATTR.outcome, outcome);
    if (reason !== '') span.setAttribute('postroom.outcome.reason', reason);
    if (outcome === 'invalid_signature') span.setAttribute('postroom.signature.result', reason);
    if (outcome === 'unavailable' || outcome === 'bad_request' || outcome === 'too_large')
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason === '' ? outcome : `${outcome}: ${reason}` });
  }
  span.end();
}
