/**
 * `postroom/service`: talking to the service. The typed client of its /sender/v2 API (docs/client.md),
 * with the shapes it sends and receives, and reconciliation through it: the reconciler that walks
 * dead deliveries and re-reads files, the audit of delivered events, and the ledger of what you sent
 * (README, "Reconciliation"). The store, errors and metrics these take are `postroom`'s own, named
 * here again so that each entry point is whole. etc/postroom-service.api.md is this surface as API
 * Extractor reads it.
 */

// The client, and the service's request and response shapes.
export { createApiClient, ApiError, type ApiClient, type ApiClientOptions, type ApiErrorCode } from './client/index.js';
export type * from './client/types.js';

// Reconciliation and the audit, for embedding or scripting.
export { createReconciler, type Reconciler, type ReconcilerDeps, type RunResult } from './reconciler/reconcile.js';
export type { ReconcileOptions, ReconcileProgress, ReconcileSummary } from './reconciler/types.js';
export { auditDelivered, type AuditResult } from './reconciler/audit.js';
export { recordSentCorrespondence } from './reconciler/state-queries.js';

// What their signatures take from `postroom`.
export type { BackoffPolicy } from './backoff.js';
export type { Db, Queryable, QueryResult } from './db/types.js';
export { PostroomError } from './errors.js';
export type { PostroomMetrics } from './metrics/metrics.js';
