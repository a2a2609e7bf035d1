import type { UnknownEvent } from '../events/catalogue.js';
import type { InboxSource, NewInboxEvent } from './types.js';

/** An envelope postroom itself produced (reconciler, tests, tools): already valid, nothing to verify. The one envelope shape. */
export type KnownEnvelope = UnknownEvent;

/** The inbox row for an envelope that did not come through ingress (no signature, no delivery headers). */
export function inboxRowFromEnvelope(e: KnownEnvelope, source: InboxSource): NewInboxEvent {
  const json = JSON.stringify(e);
  return {
    eventId: e.event_id,
    type: e.type,
    occurredAt: e.at,
    payloadJson: json,
    rawBody: Buffer.from(json),
    signatureHeader: null,
    headers: null,
    endpointId: null,
    source,
    correspondenceId: typeof e.data.correspondence_id === 'string' ? e.data.correspondence_id : null,
    secretIndex: null,
    status: 'received',
    lastError: null,
  };
}
