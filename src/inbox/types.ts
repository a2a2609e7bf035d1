export const INBOX_STATUSES = ['received', 'processing', 'processed', 'failed', 'dead', 'skipped', 'quarantined'] as const;
export type InboxStatus = (typeof INBOX_STATUSES)[number];

/** Where a row came from: a webhook delivery, the reconciler (a synthetic event) or a replay. */
export type InboxSource = 'webhook' | 'reconciler' | 'replay';

/** Channel the ingress notifies after a commit that inserted rows; workers LISTEN on it. */
export const INBOX_CHANNEL = 'postroom_inbox';

/** A row about to be written. `payloadJson` is the verified body text, stored as jsonb without re-serialising. */
export interface NewInboxEvent {
  eventId: string;
  type: string;
  occurredAt: string | null;
  payloadJson: string | null;
  rawBody: Buffer | null;
  signatureHeader: string | null;
  headers: Record<string, string> | null;
  endpointId: string | null;
  source: InboxSource;
  correspondenceId: string | null;
  secretIndex: number | null;
  status: 'received' | 'quarantined';
  lastError: string | null;
  /** The W3C traceparent of the span that wrote it (migrations/028), when tracing is on. */
  traceContext?: string | null;
}

/**
 * What the store kept: a new row, an existing one, or (when Postgres refused a row
 * no envelope check predicted) a new row kept as quarantined with the refusal as its reason.
 */
export type InsertOutcome = 'accepted' | 'duplicate' | 'quarantined';

/** A stored row as listings show it. */
export interface InboxRecord {
  event_id: string;
  type: string;
  status: InboxStatus;
  source: InboxSource;
  occurred_at: Date | null;
  received_at: Date;
  correspondence_id: string | null;
  endpoint_id: string | null;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  processed_at: Date | null;
}

export interface InboxDetail extends InboxRecord {
  payload: unknown;
  headers: Record<string, string> | null;
  secret_index: number | null;
  locked_by: string | null;
  locked_until: Date | null;
  pruned_at: Date | null;
  raw_body_bytes: number | null;
  /** The trace the event was delivered (or written by the reconciler) in, when tracing was on (migrations/028). */
  trace_id?: string | null;
}
