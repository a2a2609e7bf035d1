/**
 * postroom's public API: what an application embedding postroom calls, and the types
 * those calls take and return. Everything else under src/ is postroom's own and may
 * change without notice. The CLI (`postroom serve`, `postroom inbox …`) is assembled
 * from the same pieces in src/app. Two more entry points stand beside this one: `postroom/service`
 * (the typed client of the service's API, and reconciliation through it) and `postroom/sandbox`
 * (a local implementation of the service). etc/postroom.api.md is this surface as API Extractor reads it.
 */
import { createMetrics as createMetricSeries, type MetricsOptions, type PostroomMetrics } from './metrics/metrics.js';

// Handlers, the worker and receiving, in your own process.
export { createPostroom, type Postroom, type PostroomOptions, type PostroomRouterOptions } from './app/postroom.js';
export type { EventHandler, EveryEventHandler, HandlerContext, HandlerMap, UnknownEventHandler } from './events/handlers.js';
export type { InboxSource } from './inbox/types.js';
export type { WorkerOptions } from './worker/options.js';
export type { BackoffPolicy } from './backoff.js';
export { EventError, type EventErrorCode, type EventErrorContext, type OnErrorHook } from './events/event-error.js';
export type { SecretProvider, SecretSet } from './secrets/secret-provider.js';
export { captureRawBody } from './ingress/router.js';
export { createClosingServer, type ClosingServer } from './app/closing-server.js';
export { replayEvent } from './worker/replay.js';

// The events handlers receive: types and validation from one map.
export {
  EVENT_CATALOGUE,
  type AnyKnownEvent,
  type EventCatalogue,
  type EventData,
  type EventType,
  type KnownFields,
  type PostroomEvent,
  type UnknownEvent,
} from './events/catalogue.js';

// One delivery to one typed event, for receivers of your own; and signing, as the service does.
export {
  constructEvent,
  WebhookVerificationError,
  type ConstructEventOptions,
  type WebhookHeaders,
  type WebhookVerificationCode,
} from './ingress/construct-event.js';
export { sign, type SignOptions, type SignedPayloadScheme } from './signature/index.js';

// The correspondence projection, as createPostroom().projection reads and compares it.
export type { ProjectedCorrespondence, ProjectionDifference, SendSummary, ServiceCorrespondence } from './projection/index.js';

// The store.
export type { Db, Queryable, QueryResult } from './db/types.js';
export { createPgDb, type PgDbOptions } from './db/pg.js';
export { createPgliteDb, type PgliteDbOptions } from './db/pglite.js';
export { migrate } from './db/migrate.js';

// Errors: one base class with stable codes (ApiError, EventError and WebhookVerificationError are beside their calls).
export { PostroomError, ConfigError, StoreUnavailableError } from './errors.js';
export { HandlerInterruptedError, HandlerTimeoutError, HandlerTransactionClosedError } from './worker/errors.js';

// Logging (a pino Logger) and metrics (prom-client).
export { createLogger, type LoggerOptions } from './logging/logger.js';
export type { MetricsOptions, PostroomMetrics };
/** postroom's Prometheus series on one registry (yours, or one of their own), for createPostroom, and createApiClient and createReconciler (`postroom/service`), to share. */
export const createMetrics: (options?: MetricsOptions) => PostroomMetrics = createMetricSeries;
