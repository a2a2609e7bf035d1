import type { Clock } from '../clock.js';
import { EventError, reportEventError, type OnErrorHook } from '../events/event-error.js';
import { EventInFlightError } from '../inbox/flush-locks.js';
import type { InboxWriter } from '../inbox/group-commit.js';
import type { InsertOutcome, NewInboxEvent } from '../inbox/types.js';
import type { Logger } from '../logging/logger.js';
import { verifySignature, type SignatureFailureReason, type SignedPayloadScheme } from '../signature/index.js';
import { createAckDeadline } from './ack-deadline.js';
import { parseEnvelope, type ParsedEnvelope } from './envelope.js';
import type { SecretProvider, SecretSet } from '../secrets/secret-provider.js';

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface IncomingEvent {
  rawBody: Buffer;
  /** Lower-case header names, as Node gives them. */
  headers: Headers;
  endpointId?: string | undefined;
  /** The W3C traceparent of the request's span, stored with the event (undefined when tracing is off). */
  traceContext?: string | undefined;
}

/** What a stored (or already stored) delivery's answer reports besides its kind: its type and its two ages, for the lag histograms. */
interface StoredFacts {
  eventId: string;
  type: string;
  secretLabel: string;
  skewSeconds: number;
  /** Seconds since the signature's timestamp, at the answer. */
  signedAgeSeconds: number;
  /** Seconds since the envelope's `at`, at the answer; NaN when the body is no valid envelope. */
  occurredAgeSeconds: number;
}

export type AcceptOutcome =
  | ({ kind: 'accepted' | 'duplicate' } & StoredFacts)
  | ({ kind: 'quarantined'; reason: string; duplicate: boolean } & StoredFacts)
  | { kind: 'invalid_signature'; reason: SignatureFailureReason; skewSeconds?: number }
  | { kind: 'mismatched'; field: 'event_id' | 'type' }
  | { kind: 'unavailable'; retryAfterSeconds: number; reason: 'store_error' | 'ack_timeout' | 'in_flight' };

export interface IngressCoreOptions {
  writer: InboxWriter;
  secrets: SecretProvider;
  clock: Clock;
  logger: Logger;
  toleranceSeconds: number;
  scheme: SignedPayloadScheme;
  ackTimeoutMs: number;
  /** Told of each signed body stored as quarantined (not of its re-deliveries). */
  onError?: OnErrorHook | undefined;
}

/** Told the outcome of one delivery, once, when it is true (after the commit, or at once for a refusal). */
export type AcceptReply = (outcome: AcceptOutcome) => void;

export interface IngressCore {
  /**
   * Verifies, parses and stores one delivery and tells `reply` what became of it. The reply for a stored event
   * comes from inside the flush that committed it, with every other reply of that flush, one after another:
   * an ingress answers a whole commit's requests in one burst, as the minimal group commit does, and no promise,
   * async frame or microtask turn per request lies between the commit and the answer.
   */
  accept(event: IncomingEvent, reply: AcceptReply): void;
}

/** Delivery headers kept with a row for on-call; the signature header is stored in its own column. */
const KEPT_HEADERS = ['content-type', 'user-agent', 'x-service-event-id', 'x-service-event-type'];

function single(h: string | string[] | undefined): string | undefined {
  return Array.isArray(h) ? h[0] : h;
}

/**
 * The framework-free path from bytes to a durable row: verify before parsing,
 * check the delivery headers against the signed body, write through group
 * commit, and report an outcome only once it is true.
 */
export function createIngressCore(options: IngressCoreOptions): IngressCore {
  const { writer, logger } = options;
  const ackWithin = createAckDeadline(options.ackTimeoutMs);

  /** Everything after the secrets: verify, parse, check the headers, and write; replies at once for a refusal. */
  function withSecrets({ rawBody, headers, endpointId, traceContext }: IncomingEvent, secretSet: SecretSet, reply: AcceptReply): void {
    const verified = verifySignature({
      header: headers['x-service-signature'],
      body: rawBody,
      secrets: secretSet.secrets,
      now: Math.floor(options.clock.now() / 1000),
      toleranceSeconds: options.toleranceSeconds,
      scheme: options.scheme,
    });
    if (!verified.ok) {
      reply(
        verified.skewSeconds === undefined
          ? { kind: 'invalid_signature', reason: verified.reason }
          : { kind: 'invalid_signature', reason: verified.reason, skewSeconds: verified.skewSeconds },
      );
      return;
    }
    const secretLabel = secretSet.labels[verified.secretIndex] ?? `index:${verified.secretIndex}`;

    const envelope = parseEnvelope(rawBody);
    const mismatched = headerMismatch(logger, headers, envelope, endpointId);
    if (mismatched) {
      reply({ kind: 'mismatched', field: mismatched });
      return;
    }
    const row = inboxRow(rawBody, headers, envelope, verified.secretIndex, endpointId);
    if (traceContext !== undefined) row.traceContext = traceContext;
    // The write or the ack budget, whichever ends first (one timer for all requests: ack-deadline.ts).
    ackWithin<InsertOutcome>(
      (settle) => writer.enqueue(row, settle),
      (result) => {
        // Runs inside the writer's flush or the deadline's timer: whatever fails here, the sender still gets an answer.
        let outcome: AcceptOutcome;
        try {
          outcome = outcomeAfterWrite(options, result, envelope, secretLabel, verified, endpointId);
        } catch (err) {
          logger.error({ event_id: envelope.eventId, err }, 'ingress failed after the write; answering 503 so the sender retries');
          outcome = STORE_ERROR;
        }
        reply(outcome);
      },
      (err) => {
        if (err instanceof EventInFlightError) {
          // Another flush holds this id (a redelivery of an event whose first delivery is still being written).
          logger.info({ event_id: envelope.eventId }, 'event being written by another flush; answering 503 so the sender retries');
          reply(IN_FLIGHT);
          return;
        }
        logger.error({ event_id: envelope.eventId, err }, 'inbox write failed; answering 503 so the sender retries');
        reply(STORE_ERROR);
      },
    );
  }

  const secretsUnreadable = (endpointId: string | undefined, err: unknown, reply: AcceptReply): void => {
    // Stored secrets unreadable (store down, nothing cached): the sender must retry, not give up.
    logger.error({ endpoint_id: endpointId, err }, 'could not load signing secrets; answering 503');
    reply(STORE_ERROR);
  };

  return {
    accept(event, reply) {
      let found: SecretSet | Promise<SecretSet>;
      try {
        found = options.secrets.secretsFor(event.endpointId);
      } catch (err) {
        secretsUnreadable(event.endpointId, err, reply);
        return;
      }
      // The configured list answers synchronously: no extra turn for it.
      if (!(found instanceof Promise)) {
        withSecrets(event, found, reply);
        return;
      }
      found
        .then(
          (set) => withSecrets(event, set, reply),
          (err: unknown) => secretsUnreadable(event.endpointId, err, reply),
        )
        .catch((err: unknown) => {
          logger.error({ endpoint_id: event.endpointId, err }, 'ingress failed on a delivery; answering 503');
          reply(STORE_ERROR);
        });
    },
  };
}

const STORE_ERROR: AcceptOutcome = { kind: 'unavailable', retryAfterSeconds: 5, reason: 'store_error' };
/** The other flush ends within milliseconds, or is hung and abandoned within the ack budget: a short retry. */
const IN_FLIGHT: AcceptOutcome = { kind: 'unavailable', retryAfterSeconds: 1, reason: 'in_flight' };

/** A delivery header naming another event id or type than the signed body: a suspicious delivery, refused. */
function headerMismatch(
  logger: Logger,
  headers: Headers,
  envelope: ParsedEnvelope,
  endpointId: string | undefined,
): 'event_id' | 'type' | undefined {
  const headerId = single(headers['x-service-event-id']);
  const headerType = single(headers['x-service-event-type']);
  const bodyHasId = envelope.ok || !envelope.eventId.startsWith('quarantine:');
  if (headerId !== undefined && bodyHasId && headerId !== envelope.eventId) {
    logger.warn(
      { header_event_id: headerId.slice(0, 300), event_id: envelope.eventId, endpoint_id: endpointId },
      'suspicious delivery: X-Service-Event-Id differs from the signed body; refused',
    );
    return 'event_id';
  }
  if (headerType !== undefined && (envelope.ok || envelope.type !== 'unknown') && headerType !== envelope.type) {
    logger.warn(
      { header_type: headerType.slice(0, 300), type: envelope.type, event_id: envelope.eventId, endpoint_id: endpointId },
      'suspicious delivery: X-Service-Event-Type differs from the signed body; refused',
    );
    return 'type';
  }
  return undefined;
}

/** The inbox row of a verified delivery: received when its envelope is valid, quarantined (bytes kept) when not. */
function inboxRow(
  rawBody: Buffer,
  headers: Headers,
  envelope: ParsedEnvelope,
  secretIndex: number,
  endpointId: string | undefined,
): NewInboxEvent {
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const v = single(headers[name]);
    if (v !== undefined) kept[name] = v.slice(0, 1000);
  }
  return {
    eventId: envelope.eventId,
    type: envelope.type,
    occurredAt: envelope.ok ? envelope.at : null,
    payloadJson: envelope.ok ? envelope.json : null,
    rawBody,
    signatureHeader: single(headers['x-service-signature']) ?? null,
    headers: kept,
    endpointId: endpointId ?? null,
    source: 'webhook',
    correspondenceId: envelope.ok ? envelope.correspondenceId : null,
    secretIndex,
    status: envelope.ok ? 'received' : 'quarantined',
    lastError: envelope.ok ? null : envelope.reason,
  };
}

/** What a finished write (or the ack budget running out first) means for the sender. */
function outcomeAfterWrite(
  options: IngressCoreOptions,
  result: InsertOutcome | 'timeout',
  envelope: ParsedEnvelope,
  secretLabel: string,
  signature: { timestamp: number; skewSeconds: number },
  endpointId: string | undefined,
): AcceptOutcome {
  const { logger } = options;
  if (result === 'timeout') {
    // The write may still commit; the sender's retry will then be a duplicate. Never 2xx before the commit.
    logger.warn({ event_id: envelope.eventId, ack_timeout_ms: options.ackTimeoutMs }, 'store slower than the ack budget; answering 503');
    return { kind: 'unavailable', retryAfterSeconds: 5, reason: 'ack_timeout' };
  }
  // Quarantined: the envelope check refused the body, or the store refused a row the check passed
  // (the writer then kept its bytes as quarantined and logged the store's error).
  const refusedByStore = result === 'quarantined';
  const nowMs = options.clock.now();
  const { skewSeconds } = signature;
  const signedAgeSeconds = nowMs / 1000 - signature.timestamp;
  const occurredAgeSeconds = envelope.ok ? (nowMs - envelope.atMs) / 1000 : NaN;
  const { eventId, type } = envelope;
  // One object per answer, as before the ages were added: no facts object spread into it.
  if (!refusedByStore && envelope.ok)
    return { kind: result, eventId, type, secretLabel, skewSeconds, signedAgeSeconds, occurredAgeSeconds };
  // The writer answers 'quarantined' only for a row it was given as received, so envelope.ok holds then.
  const reason = envelope.ok ? 'the store refused the event; kept as quarantined (the inbox row gives the store error)' : envelope.reason;
  if (result !== 'duplicate') {
    if (!refusedByStore) {
      logger.warn({ event_id: envelope.eventId, reason, endpoint_id: endpointId }, 'signed body is not a valid envelope; quarantined');
    }
    const message = refusedByStore ? reason : `signed body is not a valid envelope; quarantined: ${reason}`;
    reportEventError(options.onError, logger, new EventError('event_quarantined', message), {
      eventId: envelope.eventId,
      type: envelope.type,
      status: 'quarantined',
      attempt: 0,
      retryInMs: null,
      source: 'ingress',
    });
  }
  return {
    kind: 'quarantined',
    reason,
    duplicate: result === 'duplicate',
    eventId,
    type,
    secretLabel,
    skewSeconds,
    signedAgeSeconds,
    occurredAgeSeconds,
  };
}
