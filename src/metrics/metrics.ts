import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ConfigError } from '../errors.js';
import { HotCounter, HotGauge, HotHistogram } from './hot.js';
import { EVENT_TYPE_LABELS } from './labels.js';
import { LAG_BUCKETS } from './lag.js';

export { EVENT_TYPE_LABELS };

/** Latency buckets for acknowledgements: webhook senders time out in seconds, we aim for milliseconds. */
const ACK_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const WORK_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30];

export interface MetricsOptions {
  version?: string;
  /**
   * The application's registry, so its /metrics shows postroom's series beside its own.
   * Without one, postroom has a registry of its own (tests and embedders can run several
   * instances side by side). One postroom instance per registry: names are registered once.
   */
  registry?: Registry;
  /** Node's process metrics; default on with postroom's own registry, off with the application's (it collects them itself). */
  defaultMetrics?: boolean;
}

/** Every set createMetrics made, so that seriesOf can tell one from any other object. */
const made = new WeakSet<object>();

/**
 * Every metric postroom exports, on a registry owned by one app instance or the
 * application's. Names carry the `postroom_` prefix (ingress ones `postroom_ingress_`)
 * and base units; labels are low-cardinality by construction, and an outcome is always
 * an `outcome` label. Node's process metrics keep their stock names.
 */
export function createMetrics(options: MetricsOptions = {}) {
  const registry = options.registry ?? new Registry();
  // Unprefixed (process_*, nodejs_*): stock Node dashboards and alerts expect those names.
  if (options.defaultMetrics ?? options.registry === undefined) collectDefaultMetrics({ register: registry });
  const r = [registry];

  const m = {
    registry,
    buildInfo: new Gauge({
      name: 'postroom_build_info',
      help: 'Build information; always 1.',
      labelNames: ['version', 'node_version'],
      registers: r,
    }),
    // Registered in this order, which /metrics keeps.
    ...ingressMetrics(r),
    ...workerMetrics(r),
    ...lagMetrics(r),
    ...reconcileMetrics(r),
    ...probeMetrics(r),
    ...storeMetrics(r),
    ...apiMetrics(r),
  };
  m.buildInfo.set({ version: options.version ?? 'dev', node_version: process.version }, 1);
  // Every dead series exists at 0 from the start: a counter series that first appears at 1
  // shows no increase(), so the first dead event of a type would never fire PostroomEventsDead.
  for (const eventType of [...EVENT_TYPE_LABELS, 'other']) m.eventsProcessed.inc({ event_type: eventType, status: 'dead' }, 0);
  made.add(m);
  return m;
}

/** Every series, as postroom's own modules count into them. */
export type Metrics = ReturnType<typeof createMetrics>;

/** Ingress: requests, acknowledgements, signatures and group-commit flushes. */
function ingressMetrics(r: Registry[]) {
  return {
    ingressRequests: new HotCounter({
      name: 'postroom_ingress_requests_total',
      help: 'Webhook requests by outcome (accepted, duplicate, invalid_signature, mismatched, quarantined, too_large, unavailable, bad_request) and reason.',
      labelNames: ['outcome', 'reason'],
      registers: r,
    }),
    ackDuration: new HotHistogram({
      name: 'postroom_ingress_ack_duration_seconds',
      help: 'Time from the request arriving to the response being sent, by outcome.',
      labelNames: ['outcome'],
      buckets: ACK_BUCKETS,
      registers: r,
    }),
    secretMatches: new HotCounter({
      name: 'postroom_ingress_secret_matches_total',
      help: 'Verified requests by which secret matched (a label, never the value); shows when an old secret stops being used.',
      labelNames: ['secret'],
      registers: r,
    }),
    clockSkew: new HotGauge({
      name: 'postroom_ingress_clock_skew_seconds',
      help: 'Last observed skew: our clock minus the signature timestamp.',
      registers: r,
    }),
    clockSkewAbs: new HotHistogram({
      name: 'postroom_ingress_clock_skew_abs_seconds',
      help: 'Absolute clock skew between the sender and this replica.',
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers: r,
    }),
    ingressBatchSize: new Histogram({
      name: 'postroom_ingress_batch_rows',
      help: 'Rows per group-commit flush.',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: r,
    }),
    ingressFlushDuration: new Histogram({
      name: 'postroom_ingress_flush_duration_seconds',
      help: 'Duration of one group-commit flush (insert and commit), by outcome (committed, failed).',
      labelNames: ['outcome'],
      buckets: ACK_BUCKETS,
      registers: r,
    }),
  };
}

/** The inbox and the worker: backlog, handlers, claims and batches, finished events. */
function workerMetrics(r: Registry[]) {
  return {
    inboxEvents: new Gauge({
      name: 'postroom_inbox_events',
      help: 'Inbox events by status (from the database, at scrape time).',
      labelNames: ['status'],
      registers: r,
    }),
    inboxOldestUnfinishedAge: new Gauge({
      name: 'postroom_inbox_oldest_unprocessed_age_seconds',
      help: 'Age of the oldest event not yet processed (received, processing or failed); 0 when none.',
      registers: r,
    }),
    handlerDuration: new HotHistogram({
      name: 'postroom_handler_duration_seconds',
      help: 'Handler run time by event type.',
      labelNames: ['event_type'],
      buckets: WORK_BUCKETS,
      registers: r,
    }),
    // Where a batch's time goes besides the handlers: a slow claim or completion (a plan gone wrong,
    // locks, a starved store) shows here before it shows as a growing backlog.
    workerClaimDuration: new Histogram({
      name: 'postroom_worker_claim_duration_seconds',
      help: 'Time to claim one batch (one statement in its own transaction), including claims that found nothing.',
      buckets: WORK_BUCKETS,
      registers: r,
    }),
    workerBatchDuration: new Histogram({
      name: 'postroom_worker_batch_duration_seconds',
      help: 'Time to run one claimed batch to its commit: handlers, projection and completion.',
      buckets: WORK_BUCKETS,
      registers: r,
    }),
    handlerFailures: new HotCounter({
      name: 'postroom_handler_failures_total',
      help: 'Handler attempts that threw, by event type.',
      labelNames: ['event_type'],
      registers: r,
    }),
    // The one count of finished events: dead ones are status="dead" here (from a handler's
    // last attempt or an expired lease), not also in a second counter.
    eventsProcessed: new HotCounter({
      name: 'postroom_events_processed_total',
      help: 'Events finished by the worker, by event type and final status (processed, skipped, quarantined, dead).',
      labelNames: ['event_type', 'status'],
      registers: r,
    }),
  };
}

/**
 * An event's age (src/metrics/lag.ts): since the signature's timestamp (`since="signed"`) and since the
 * envelope's `at` (`since="occurred"`), by the group of its type. The lag SLO is read from these.
 */
function lagMetrics(r: Registry[]) {
  return {
    ackAge: new HotHistogram({
      name: 'postroom_event_age_at_ack_seconds',
      help: 'Age of a delivered event when it was acknowledged, since the signature timestamp (since="signed") or the envelope\'s at (since="occurred"), by type group and outcome (accepted, duplicate, quarantined).',
      labelNames: ['since', 'type_group', 'outcome'],
      buckets: LAG_BUCKETS,
      registers: r,
    }),
    // source="reconciler" apart: a synthetic event's age is the outage it closes, not the pipeline's lag.
    processedAge: new HotHistogram({
      name: 'postroom_event_age_at_processing_seconds',
      help: 'Age of an event when the worker finished it, since the signature timestamp (since="signed", webhook events only) or the envelope\'s at (since="occurred"), by type group, final status (processed, skipped, quarantined, dead) and source (webhook, reconciler, replay).',
      labelNames: ['since', 'type_group', 'outcome', 'source'],
      buckets: LAG_BUCKETS,
      registers: r,
    }),
  };
}

/** The reconciler's runs and what they left open. */
function reconcileMetrics(r: Registry[]) {
  return {
    reconcileRuns: new Counter({
      name: 'postroom_reconcile_runs_total',
      help: 'Reconcile runs by outcome (clean, gaps_open, failed, skipped_not_leader).',
      labelNames: ['outcome'],
      registers: r,
    }),
    reconcileDuration: new Histogram({
      name: 'postroom_reconcile_duration_seconds',
      help: 'Reconcile run duration.',
      buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600],
      registers: r,
    }),
    reconcileGapsOpen: new Gauge({
      name: 'postroom_reconcile_gaps_open',
      help: 'Gaps found by the reconciler and still open: not recovered, state-synced, not consumed or ignored (from the database).',
      registers: r,
    }),
    reconcileLastSuccess: new Gauge({
      name: 'postroom_reconcile_last_success_timestamp_seconds',
      help: 'Unix time of the last reconcile run that completed (from the database; 0 if none).',
      registers: r,
    }),
    reconcileAtRisk: new Gauge({
      name: 'postroom_reconcile_deliveries_at_risk',
      help: 'Pending deliveries older than the threshold at the last completed reconcile run.',
      registers: r,
    }),
    // One series per plane and endpoint, at most 200 of them (the most lagging, src/app/store-gauges.ts): bounded.
    completeThrough: new Gauge({
      name: 'postroom_complete_through_timestamp_seconds',
      help:
        'Completeness watermark per endpoint (Unix time): every delivery the service created for it before then is in the inbox ' +
        'or a gap closed with evidence, and none is still pending past the at-risk age (proved by the reconciler; from the database).',
      labelNames: ['plane', 'endpoint'],
      registers: r,
    }),
  };
}

/** The live end-to-end probe (src/probe). Labels bounded: outcomes are a fixed set, endpoints at most 200. */
function probeMetrics(r: Registry[]) {
  return {
    probeRuns: new Counter({
      name: 'postroom_probe_runs_total',
      help: 'Probes of an endpoint by outcome: ok, or the step that failed (api_refused, never_delivered, signature_refused, not_stored), or skipped.',
      labelNames: ['outcome'],
      registers: r,
    }),
    probeRoundTrip: new Histogram({
      name: 'postroom_probe_round_trip_seconds',
      help: 'From asking the service for webhook.test to postroom having verified and stored it (successful probes).',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: r,
    }),
    probeUp: new Gauge({
      name: 'postroom_probe_up',
      help: "1 when an endpoint's last finished probe succeeded, 0 when it failed (from the database).",
      labelNames: ['plane', 'endpoint'],
      registers: r,
    }),
    probeLastSuccess: new Gauge({
      name: 'postroom_probe_last_success_timestamp_seconds',
      help: "Unix time an endpoint's last successful probe finished (from the database; 0 if none).",
      labelNames: ['plane', 'endpoint'],
      registers: r,
    }),
  };
}

/** The database as a scrape finds it. */
function storeMetrics(r: Registry[]) {
  return {
    storeUp: new Gauge({
      name: 'postroom_store_up',
      help: "1 when the database answered the last scrape's queries in time, else 0.",
      registers: r,
    }),
    // De-duplication is a B-tree of random event ids that grows with every event kept; once it outgrows
    // shared_buffers, ingest slows as the inbox grows (docs/scaling.md). The two together say when.
    storeEventIdIndexBytes: new Gauge({
      name: 'postroom_store_event_id_index_bytes',
      help: "Size of the inbox's event-id index, which every new event inserts into (from the database).",
      registers: r,
    }),
    storeSharedBuffersBytes: new Gauge({
      name: 'postroom_store_shared_buffers_bytes',
      help: "The database's shared_buffers setting, in bytes (from the database).",
      registers: r,
    }),
  };
}

/** Calls to the service API. */
function apiMetrics(r: Registry[]) {
  return {
    apiRequests: new Counter({
      name: 'postroom_api_requests_total',
      help: 'Service API requests by operation and status class (2xx, 4xx, 5xx, network).',
      labelNames: ['operation', 'status_class'],
      registers: r,
    }),
    apiDuration: new Histogram({
      name: 'postroom_api_request_duration_seconds',
      help: 'Service API request duration by operation.',
      labelNames: ['operation'],
      buckets: WORK_BUCKETS,
      registers: r,
    }),
  };
}

/**
 * postroom's series as an application holds them: made by createMetrics and handed to createPostroom,
 * createApiClient and createReconciler, so that all of them count into one registry. Which series
 * there are and what they count is in their help texts, as a scrape shows them.
 */
export interface PostroomMetrics {
  /** The registry the series are on (the application's, or one of their own): serve `registry.metrics()`. */
  readonly registry: Registry;
}

/** The series behind what createMetrics returned; anything else is refused with a ConfigError. */
export function seriesOf(metrics: PostroomMetrics): Metrics {
  if (!made.has(metrics)) throw new ConfigError('metrics', 'expected the value createMetrics() returns');
  return metrics as Metrics;
}
