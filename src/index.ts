/**
 * postroom's public API: one path to each capability. The CLI (`postroom serve`,
 * `postroom inbox …`) is assembled from the same pieces in src/app; the sandbox
 * is its own entry point, `postroom/sandbox`.
 */

// Handlers, the worker and receiving, in your own process.
export {
  createPostroom,
  type Postroom,
  type PostroomHandlerOptions,
  type PostroomOptions,
  type PostroomRouterOptions,
} from './app/postroom.js';
export type { EventHandler, EveryEventHandler, HandlerContext, HandlerMap, UnknownEventHandler } from './events/handlers.js';
export type { InboxSource } from './inbox/types.js';
export type { WorkerOptions } from './worker/options.js';
export type { DrainResult } from './worker/worker.js';
export { EventError, type EventErrorCode, type EventErrorContext, type OnErrorHook } from './events/event-error.js';
export type { NodeWebhookHandler } from './ingress/ingress.js';
export { captureRawBody } from './ingress/router.js';
export { createClosingServer, type ClosingServer } from './app/closing-server.js';
export { staticSecrets, type SecretProvider, type SecretSet } from './secrets/secret-provider.js';
export { createForwarder, type Forwarder, type ForwarderOptions } from './worker/forwarder.js';
export { replayEvent, replayMatching, type ReplayOneResult, type ReplaySummary } from './worker/replay.js';
export type { ReplayFilter } from './inbox/admin-queries.js';

// One delivery to one typed event, for receivers of your own; and signing, as the service does.
export {
  constructEvent,
  WebhookVerificationError,
  type ConstructEventOptions,
  type WebhookHeaders,
  type WebhookVerificationCode,
} from './ingress/construct-event.js';
export { sign, type SignOptions, type SignedPayloadScheme, type SignatureFailureReason } from './signature/index.js';

// The event catalogue: types and validation from one map.
export {
  EVENT_CATALOGUE,
  EVENT_TYPES,
  KNOWN_ACTS,
  isKnownEventType,
  type AnyKnownEvent,
  type EventCatalogue,
  type EventData,
  type KnownFields,
  type EventType,
  type PostroomEvent,
  type UnknownEvent,
} from './events/catalogue.js';

// The correspondence projection's types (read it through createPostroom().projection).
export type {
  ProjectedCorrespondence,
  ProjectedParticipant,
  ProjectionDifference,
  SendSummary,
  ServiceCorrespondence,
} from './projection/index.js';
export { COMPARED_FIELDS, COMPARED_PARTICIPANT_FIELDS, type ComparedField, type ComparedParticipantField } from './projection/compare.js';

// The store.
export type { Db, DbKind, NamedStatement, Queryable, QueryResult, Session, Sql } from './db/types.js';
export { createPgDb, type PgDbOptions } from './db/pg.js';
export { createPgliteDb, type PgliteDbOptions } from './db/pglite.js';
export { migrate, migrationStatus, type MigrationFile, type MigrationStatus } from './db/migrate.js';
export { INBOX_SOURCES, INBOX_STATUSES, type InboxStatus } from './inbox/types.js';

// Errors: one base class with stable codes.
export { PostroomError, ConfigError, StoreUnavailableError, isPostroomError } from './errors.js';
export { ForwardError, HandlerInterruptedError, HandlerTimeoutError, HandlerTransactionClosedError } from './worker/errors.js';

export { createLogger, silentLogger, type Logger, type LoggerOptions } from './logging/logger.js';
export type { Clock } from './clock.js';
export { createMetrics, type Metrics, type MetricsOptions } from './metrics/metrics.js';
export {
  HotCounter,
  HotGauge,
  HotHistogram,
  type HotCounterChild,
  type HotGaugeChild,
  type HotHistogramChild,
  type MetricLabels,
} from './metrics/hot.js';

// The service API client.
export {
  createApiClient,
  ApiError,
  API_ERROR_CODES,
  isApiError,
  type ApiClient,
  type ApiClientOptions,
  type ApiErrorCode,
  type BackoffPolicy,
  type Jitter,
  type ClientTls,
  type Sleep,
  type Timeouts,
} from './client/index.js';
// ApiClient is the factory's return type: these names are exported for their types only.
export type { buildClient } from './client/client.js';
export type { listChangedCorrespondence, ChangedCorrespondence, ListChangedParams } from './client/resources/correspondence-listing.js';
export type { ApiErrorInit } from './client/errors.js';
export type { ResourceContext } from './client/resources/context.js';
export type { ApiRequest, ApiResponse, HttpMethod, Transport } from './client/http.js';
export type { OperationName, OPERATION_SCOPES } from './client/scopes.js';
export { DELIVERY_STATUSES } from './client/types.js';
export type {
  CallOptions,
  Correspondence,
  CorrespondenceParticipant,
  CreateCorrespondenceInput,
  CreatedCorrespondence,
  CreateEndpointInput,
  DeliveryStatus,
  IdempotentCallOptions,
  ListDeliveriesParams,
  OrganisationCaller,
  Page,
  PageParams,
  Participant,
  ParticipantState,
  Plane,
  PlanRunResult,
  Recipient,
  RecipientAddressing,
  RotateApiKeyInput,
  RotatedApiKey,
  RotatedEndpointSecret,
  SendSummary as ServiceSendSummary,
  UpdateEndpointInput,
  UploadDocumentInput,
  UploadedDocument,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from './client/types.js';

// Reconciliation, for embedding or scripting.
export { createReconciler, type Reconciler, type ReconcilerDeps, type RunResult } from './reconciler/reconcile.js';
export { auditDelivered, type AuditResult } from './reconciler/audit.js';
export { recordSentCorrespondence } from './reconciler/state-queries.js';
export type { ReconcileOptions, ReconcileProgress, ReconcileSummary, ReconcilerApi } from './reconciler/types.js';
export type { LockHolder } from './reconciler/state-queries.js';
