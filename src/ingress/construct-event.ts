import { PostroomError } from '../errors.js';
import type { AnyKnownEvent, UnknownEvent } from '../events/catalogue.js';
import { validateEvent } from '../events/validate.js';
import type { SignedPayloadScheme } from '../signature/index.js';
import { verifySignature } from '../signature/index.js';
import { INGRESS_DEFAULTS } from './defaults.js';
import { parseEnvelope } from './envelope.js';

/**
 * Why constructEvent refused a delivery. The first four are the signature check's reasons
 * (SignatureFailureReason), which the webhook route answers 401 with; the rest say the signed
 * body is not an event.
 */
export type WebhookVerificationCode =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_outside_window'
  | 'no_matching_signature'
  | 'event_id_mismatch'
  | 'type_mismatch'
  | 'invalid_payload'
  | 'invalid_event';

/** Thrown by constructEvent, like Stripe's SignatureVerificationError and Standard Webhooks' WebhookVerificationError. */
export class WebhookVerificationError extends PostroomError {
  declare readonly code: WebhookVerificationCode;
  constructor(code: WebhookVerificationCode, message: string) {
    super(code, message);
  }
}

/** Request headers as Node gives them (any case is accepted here), or a fetch `Headers`. */
export type WebhookHeaders = Readonly<Record<string, string | string[] | undefined>> | { get(name: string): string | null };

export interface ConstructEventOptions {
  /** How far the signature's timestamp may be from `now`, either way (default 300 s). */
  toleranceSeconds?: number;
  /** The current time: a Date or Unix seconds (default the system clock). */
  now?: Date | number;
  /** What the signature covers; the service signs the body (default `body`). */
  scheme?: SignedPayloadScheme;
}

function header(headers: WebhookHeaders, name: string): string | string[] | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | string[] | undefined>>;
  if (name in record) return record[name];
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : record[key];
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * One call from a delivery to a typed event, for receivers of your own (a
 * serverless function, another framework): verifies the X-Service-Signature over
 * the exact bytes, then parses the envelope and checks `data` against the event
 * catalogue. Types the catalogue does not know come back as an UnknownEvent.
 * Nothing is stored: de-duplication and retries are the inbox's (createPostroom).
 *
 *   const event = constructEvent(rawBody, req.headers, [process.env.POSTROOM_WEBHOOK_SECRET]);
 *   switch (event.type) { … }   // each case narrows event.data to its type's fields
 *
 * Throws WebhookVerificationError (a PostroomError) with a stable `code`.
 */
export function constructEvent(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secrets: string | readonly string[],
  options: ConstructEventOptions = {},
): AnyKnownEvent | UnknownEvent {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const now = options.now === undefined ? Date.now() / 1000 : typeof options.now === 'number' ? options.now : options.now.getTime() / 1000;
  const verified = verifySignature({
    header: header(headers, 'x-service-signature'),
    body,
    secrets: typeof secrets === 'string' ? [secrets] : secrets,
    now: Math.floor(now),
    toleranceSeconds: options.toleranceSeconds ?? INGRESS_DEFAULTS.toleranceSeconds,
    scheme: options.scheme ?? INGRESS_DEFAULTS.scheme,
  });
  if (!verified.ok)
    throw new WebhookVerificationError(verified.reason, `signature verification failed: ${verified.reason.replace(/_/g, ' ')}`);

  const envelope = parseEnvelope(body);
  if (!envelope.ok) throw new WebhookVerificationError('invalid_payload', `the signed body is not an event envelope: ${envelope.reason}`);
  const headerId = single(header(headers, 'x-service-event-id'));
  if (headerId !== undefined && headerId !== envelope.eventId)
    throw new WebhookVerificationError('event_id_mismatch', 'the X-Service-Event-Id header does not match the signed body');
  const headerType = single(header(headers, 'x-service-event-type'));
  if (headerType !== undefined && headerType !== envelope.type)
    throw new WebhookVerificationError('type_mismatch', 'the X-Service-Event-Type header does not match the signed body');

  const validated = validateEvent({ event_id: envelope.eventId, type: envelope.type, payload: JSON.parse(envelope.json) as unknown });
  if (validated.kind === 'invalid') throw new WebhookVerificationError('invalid_event', validated.reason);
  return validated.event;
}
