/**
 * Shapes from docs/service-contract.md and docs/events.md. Where the spec is
 * silent we keep fields optional and let unknown fields through (index
 * signatures), so a service that adds fields does not break callers.
 */

export type { ChangedCorrespondence, ListChangedParams } from './resources/correspondence-listing.js';

export type Plane = 'sandbox' | 'live';

/** GET /me */
export interface OrganisationCaller {
  organization_id: string;
  organization_name: string;
  plane: string;
  tier: string;
  approved: boolean;
  scopes: string[];
  [extra: string]: unknown;
}

/** POST /documents request. */
export interface UploadDocumentInput {
  filename: string;
  media_type: string;
  content_base64: string;
}

export interface UploadedDocument {
  document_id: string;
  filename: string;
  size_bytes: number;
  media_type?: string;
  [extra: string]: unknown;
}

export interface Recipient {
  /** The spec shows only the NIN form; the others share the shape with their own type and field. */
  addressing: { type: string; nin?: string; [identifier: string]: unknown };
  display_name?: string;
  ref?: string;
}

export interface CreateCorrespondenceInput {
  kind: string;
  subject: string;
  content_type: string;
  document_ids: string[];
  recipients: Recipient[];
  [extra: string]: unknown;
}

export interface Participant {
  participant_id: string;
  ref: string;
  state: 'pending' | 'held' | 'delivered' | 'undeliverable' | (string & {});
  [extra: string]: unknown;
}

export interface CreatedCorrespondence {
  correspondence_id: string;
  kind: string;
  status: string;
  participants: Participant[];
  /** True when the service answered 202: the send is queued and every participant is pending. */
  queued: boolean;
  [extra: string]: unknown;
}

/** docs/events.md: GET /correspondence/{id} participant element. */
export interface CorrespondenceParticipant extends Participant {
  last_act?: string | null;
  last_act_at?: string | null;
}

export interface SendSummary {
  delivered: number;
  held: number;
  undeliverable: number;
  total: number;
}

/** docs/events.md: the GET /correspondence/{id} response. */
export interface Correspondence {
  correspondence_id: string;
  kind: string;
  subject?: string;
  content_type?: string;
  document_ids?: string[];
  status: string;
  created_at?: string;
  participants: CorrespondenceParticipant[];
  /** Null until a queued send (202) completes. */
  send_summary: SendSummary | null;
  [extra: string]: unknown;
}

/** POST /plans/{plan_id}/runs: request and response bodies are not shown beyond 202. */
export interface PlanRunResult {
  accepted: true;
  body: unknown;
}

export interface RotateApiKeyInput {
  grace_seconds: number;
}

/** The field name carrying the new key is not shown; we read `secret`, `api_key` or `key`, in that order. */
export interface RotatedApiKey {
  secret: string;
  [extra: string]: unknown;
}

export interface WebhookEndpoint {
  endpoint_id: string;
  url: string;
  events: string[];
  active: boolean;
  created_at: string;
  [extra: string]: unknown;
}

/** Create and rotate-secret responses: the only two that ever carry the signing secret. */
export interface WebhookEndpointWithSecret extends WebhookEndpoint {
  secret: string;
}

export interface RotatedEndpointSecret {
  endpoint_id: string;
  secret: string;
  [extra: string]: unknown;
}

export interface CreateEndpointInput {
  url: string;
  events: string[];
}

export interface UpdateEndpointInput {
  url?: string;
  events?: string[];
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead';

export interface WebhookDelivery {
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus | (string & {});
  attempts: number;
  last_error: string;
  created_at: string;
  delivered_at?: string | null;
  [extra: string]: unknown;
}

export interface PageParams {
  limit?: number;
  cursor?: string;
}

export interface ListDeliveriesParams extends PageParams {
  status?: DeliveryStatus;
  endpoint_id?: string;
}

/** One page of a cursor-paged list. `nextCursor` null means the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Per-call options every operation takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Per-call options of create-type POSTs. */
export interface IdempotentCallOptions extends CallOptions {
  /** Replaces the generated key (e.g. to make a retry of a whole job hit the same key). */
  idempotencyKey?: string;
}
