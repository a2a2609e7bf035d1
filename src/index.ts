/**
 * postroom's public API. The CLI (`postroom serve`, `postroom inbox …`) uses the
 * same pieces; embedders start here.
 */

// Handlers and the worker, in your own process.
export { createPostroom, type Postroom, type PostroomOptions, type PostroomRouterOptions } from './app/postroom.js';
export { createWorker, type CreateWorkerOptions, type DrainResult, type Worker } from './worker/worker.js';
export { DEFAULT_WORKER_OPTIONS, workerOptionsFromConfig, type WorkerOptions } from './worker/options.js';
export { DEFAULT_RETRY_BACKOFF, retryDelayMs, type RetryBackoff } from './worker/backoff.js';
export { createForwarder, type Forwarder, type ForwarderOptions } from './worker/forwarder.js';
export { replayEvent, replayMatching, type ReplaySummary } from './worker/replay.js';
export { createHandlerRegistry, type HandlerRegistry } from './events/registry.js';
export type { EventHandler, EveryEventHandler, HandlerContext, HandlerMap, UnknownEventHandler } from './events/handlers.js';

// The event catalogue: types and validation from one map.
export {
  EVENT_CATALOGUE,
  EVENT_TYPES,
  KNOWN_ACTS,
  isKnownEventType,
  type AnyKnownEvent,
  type EventData,
  type EventType,
  type PostroomEvent,
  type UnknownEvent,
} from './events/catalogue.js';
export { validateEvent, type ValidatedEvent } from './events/validate.js';

// The correspondence projection.
export {
  compareWithService,
  getProjectedCorrespondence,
  listOpenCorrespondenceIds,
  type ProjectedCorrespondence,
  type ProjectedParticipant,
  type ProjectionDifference,
  type SendSummary,
  type ServiceCorrespondence,
} from './projection/index.js';

// Receiving: mount the webhook route in your own Express app.
export { createIngressRouter, captureRawBody, type IngressRouterOptions } from './ingress/router.js';
export { createIngressCore, type IngressCore, type IngressCoreOptions, type AcceptOutcome } from './ingress/accept.js';
export { staticSecrets, type SecretProvider } from './secrets/secret-provider.js';
export { createInboxWriter, type InboxWriter } from './inbox/group-commit.js';

// Signatures, exactly as the service computes them.
export { sign, verifySignature, parseSignatureHeader, type SignOptions, type VerifyOptions, type VerifyResult, type SignedPayloadScheme } from './signature/index.js';

// The store.
export type { Db, Queryable, QueryResult } from './db/types.js';
export { createPgDb, type PgDbOptions } from './db/pg.js';
export { createPgliteDb, type PgliteDbOptions } from './db/pglite.js';
export { migrate, migrationStatus } from './db/migrate.js';
export { INBOX_STATUSES, type InboxStatus } from './inbox/types.js';

// Errors: one base class with stable codes.
export { PostroomError, ConfigError, StoreUnavailableError, isPostroomError } from './errors.js';
export { ForwardError, HandlerInterruptedError, HandlerTimeoutError, HandlerTransactionClosedError } from './worker/errors.js';

export { createLogger, silentLogger, type Logger } from './logging/logger.js';
export { createMetrics, type Metrics, type MetricsOptions } from './metrics/metrics.js';

// The service API client.
export { createApiClient, createApiClientFromConfig, ApiError, isApiError, type ApiClient, type ApiClientOptions } from './client/index.js';
export type { Correspondence, WebhookDelivery, WebhookEndpoint, Plane } from './client/types.js';

// Reconciliation, for embedding or scripting.
export { createReconciler, type Reconciler, type RunResult } from './reconciler/reconcile.js';
export { auditDelivered, type AuditResult } from './reconciler/audit.js';
export { recordSentCorrespondence, sentLedger } from './reconciler/state-queries.js';
export type { ReconcileOptions, ReconcileSummary } from './reconciler/types.js';

// The sandbox: a local service for your own tests.
export { createSandbox, startSandbox, startTraffic, type Sandbox, type SandboxOptions } from './sandbox/index.js';
