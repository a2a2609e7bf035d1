import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { systemClock } from '../clock.js';
import { ConfigError } from '../errors.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { seriesOf, type PostroomMetrics } from '../metrics/metrics.js';
import { VERSION } from '../version.js';
import { createApiDispatcher } from './dispatcher.js';
import { API_CLIENT_DEFAULTS } from './defaults.js';
import { DEFAULT_TIMEOUTS, createTransport, resolveBase, type Timeouts } from './http.js';
import { planeFromKey } from './plane.js';
import type { BackoffPolicy } from '../backoff.js';
import { apiKeysResource } from './resources/api-keys.js';
import type { ResourceContext } from './resources/context.js';
import { correspondenceResource } from './resources/correspondence.js';
import { documentsResource } from './resources/documents.js';
import { meResource } from './resources/me.js';
import { plansResource } from './resources/plans.js';
import { webhookDeliveriesResource } from './resources/webhook-deliveries.js';
import { webhookEndpointsResource } from './resources/webhook-endpoints.js';
import type {
  CallOptions,
  ChangedCorrespondence,
  Correspondence,
  CreateCorrespondenceInput,
  CreatedCorrespondence,
  CreateEndpointInput,
  IdempotentCallOptions,
  ListChangedParams,
  ListDeliveriesParams,
  OrganisationCaller,
  Page,
  PageParams,
  Plane,
  PlanRunResult,
  RotateApiKeyInput,
  RotatedApiKey,
  RotatedEndpointSecret,
  UpdateEndpointInput,
  UploadDocumentInput,
  UploadedDocument,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from './types.js';

export interface ApiClientOptions {
  /** The service's base address; /sender/v2 is appended (and not doubled when already there). */
  baseUrl: string;
  /** svc_sandbox_… or svc_live_…; the prefix selects the plane. */
  apiKey: string;
  /** Bring your own (a MockAgent in tests, a proxy agent); otherwise one is built from `timeouts` and `tls`. */
  dispatcher?: Dispatcher;
  /** From createMetrics: counts and times every attempt. */
  metrics?: PostroomMetrics;
  logger?: Logger;
  /** Milliseconds since the epoch (Retry-After dates, deadlines); injected so tests can skew it. */
  clock?: { now(): number };
  /** Waits between attempts; injected so tests run retries instantly. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** [0, 1) for backoff jitter. */
  random?: () => number;
  /** Makes Idempotency-Keys; randomUUID by default. */
  idempotencyKey?: () => string;
  /** Template for correspondence.get, relative to /sender/v2; must contain {id}. Default /correspondence/{id}. */
  correspondencePath?: string;
  /** Attempts per call, the first included (default 5). */
  maxAttempts?: number;
  /** Budget for one call including every retry and wait (default 60 s). */
  deadlineMs?: number;
  /** Connect (TCP + TLS), response headers, and the longest silence while the body arrives (defaults 5, 15 and 30 s). */
  timeouts?: { connectMs?: number; headersMs?: number; bodyMs?: number };
  /**
   * Client certificate and its key (PEM) for tier-1 senders, and an extra CA bundle to trust
   * for the gateway; only for the dispatcher the client builds itself.
   */
  tls?: { cert?: string | Buffer; key?: string | Buffer; ca?: string | Buffer };
  backoff?: BackoffPolicy;
  /**
   * Called with every correspondence this client creates, before create() returns.
   * Pass `sentLedger(db)` so the reconciler can re-read everything you sent, even
   * when its correspondence.created event is the one that went missing.
   */
  onCorrespondenceCreated?: (created: { correspondence_id: string }) => void | Promise<void>;
}

/**
 * The service's /sender/v2 API, typed (docs/client.md). Every call takes `{ signal }`;
 * the POSTs also take `{ idempotencyKey }`. Failures are ApiErrors.
 */
export interface ApiClient {
  /** Which plane the key acts on; the CLI shows it and asks before live writes. */
  readonly plane: Plane;
  /** Origin and path prefix requests go to (no credentials in it). */
  readonly baseUrl: string;
  /** GET /me: who the key belongs to and what it may do. Touches no business state: the connectivity check. */
  me(options?: CallOptions): Promise<OrganisationCaller>;
  documents: {
    /** POST /documents; not retried unless given an idempotency key (the spec shows none). */
    upload(input: UploadDocumentInput, options?: IdempotentCallOptions): Promise<UploadedDocument>;
  };
  correspondence: {
    /** POST /correspondence with an Idempotency-Key; `queued` is true when the service answered 202. */
    create(input: CreateCorrespondenceInput, options?: IdempotentCallOptions): Promise<CreatedCorrespondence>;
    get(correspondenceId: string, options?: CallOptions): Promise<Correspondence>;
    /** One page of the files changed since `updatedSince`, oldest change first (an assumed route: docs/client.md). */
    listChanged(params?: ListChangedParams, options?: CallOptions): Promise<Page<ChangedCorrespondence>>;
  };
  plans: {
    /** POST /plans/{plan_id}/runs; the body is passed through. Not retried unless given an idempotency key. */
    run(planId: string, body?: Record<string, unknown>, options?: IdempotentCallOptions): Promise<PlanRunResult>;
  };
  apiKeys: {
    /** Mints a new key (`secret`); the old one lasts `grace_seconds`. Not retried unless given an idempotency key. */
    rotate(keyId: string, input: RotateApiKeyInput, options?: IdempotentCallOptions): Promise<RotatedApiKey>;
  };
  webhookEndpoints: {
    /** The answer holds the signing secret: the only time the service shows it. */
    create(input: CreateEndpointInput, options?: IdempotentCallOptions): Promise<WebhookEndpointWithSecret>;
    list(params?: PageParams, options?: CallOptions): Promise<Page<WebhookEndpoint>>;
    /** Every endpoint, one page in memory at a time. */
    iterate(params?: PageParams, options?: CallOptions): AsyncGenerator<WebhookEndpoint, void, undefined>;
    /** Undefined when the service answers without a body. */
    update(endpointId: string, patch: UpdateEndpointInput, options?: CallOptions): Promise<WebhookEndpoint | undefined>;
    /** A 404 on a later attempt of the same call (the first answer lost) counts as deleted. */
    delete(endpointId: string, options?: CallOptions): Promise<void>;
    /** The service stops the old secret at once; postroom's own overlap keeps verifying with it (docs/client.md). */
    rotateSecret(endpointId: string, options?: IdempotentCallOptions): Promise<RotatedEndpointSecret>;
    /** One signed webhook.test delivery. */
    test(endpointId: string, options?: IdempotentCallOptions): Promise<Record<string, unknown> | undefined>;
  };
  webhookDeliveries: {
    list(params?: ListDeliveriesParams, options?: CallOptions): Promise<Page<WebhookDelivery>>;
    /** Every match, one page in memory at a time. */
    iterate(params?: ListDeliveriesParams, options?: CallOptions): AsyncGenerator<WebhookDelivery, void, undefined>;
  };
  /** Closes the connection pool the client built (a dispatcher passed in is left to its owner). */
  close(): Promise<void>;
  /** What JSON.stringify and loggers see: never the key. */
  toJSON(): { plane: Plane; baseUrl: string };
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const apiKey = options.apiKey;
  if (typeof apiKey !== 'string' || apiKey === '')
    throw new ConfigError('POSTROOM_API_KEY', 'no API key given; set POSTROOM_API_KEY or POSTROOM_API_KEY_FILE');
  // A newline or space would let the value spill into other headers.
  if (/\s/.test(apiKey))
    throw new ConfigError(
      'POSTROOM_API_KEY',
      'the API key contains whitespace; check the variable or file for a stray space or line break',
    );
  const plane: Plane = planeFromKey(apiKey);

  let base: { origin: string; prefix: string };
  try {
    base = resolveBase(options.baseUrl);
  } catch {
    throw new ConfigError('POSTROOM_API_BASE_URL', 'expected an absolute http(s) URL such as https://api.example.com');
  }
  if (!/^https?:$/.test(new URL(base.origin).protocol))
    throw new ConfigError('POSTROOM_API_BASE_URL', 'expected a URL starting with https: (or http: for a local sandbox)');

  const correspondencePath = options.correspondencePath ?? API_CLIENT_DEFAULTS.correspondencePath;
  if (!correspondencePath.startsWith('/') || !correspondencePath.includes('{id}')) {
    throw new ConfigError(
      'POSTROOM_CORRESPONDENCE_PATH',
      `expected a path relative to /sender/v2 that starts with / and contains {id}, e.g. ${API_CLIENT_DEFAULTS.correspondencePath}`,
    );
  }
  const maxAttempts = options.maxAttempts ?? API_CLIENT_DEFAULTS.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
    throw new ConfigError('POSTROOM_API_MAX_ATTEMPTS', 'expected a whole number of at least 1');
  const deadlineMs = options.deadlineMs ?? API_CLIENT_DEFAULTS.deadlineMs;
  if (!(deadlineMs > 0)) throw new ConfigError('POSTROOM_API_DEADLINE_MS', 'expected a positive number of milliseconds');
  const timeouts: Timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };

  if (options.dispatcher && options.tls) {
    throw new ConfigError(
      'tls',
      "a client certificate is set on the dispatcher the client builds; with your own dispatcher, put it in that dispatcher's connect options instead",
    );
  }
  const ownsDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? createApiDispatcher({ timeouts, tls: options.tls });
  const logger = (options.logger ?? silentLogger()).child({ component: 'api-client', plane });

  const transport = createTransport({
    baseUrl: options.baseUrl,
    apiKey,
    dispatcher,
    timeouts,
    maxAttempts,
    deadlineMs,
    clock: options.clock ?? systemClock,
    sleep: options.sleep ?? ((ms, signal) => delay(ms, undefined, signal ? { signal } : undefined)),
    random: options.random ?? Math.random,
    logger,
    metrics: options.metrics && seriesOf(options.metrics),
    userAgent: `postroom/${VERSION}`,
    ...(options.backoff ? { backoff: options.backoff } : {}),
  });
  const ctx: ResourceContext = {
    transport,
    newIdempotencyKey: options.idempotencyKey ?? randomUUID,
    correspondencePath,
    onCorrespondenceCreated: options.onCorrespondenceCreated,
    logger,
    sleep: (ms) => (options.sleep ?? ((t: number) => delay(t)))(ms),
  };

  return {
    plane,
    baseUrl: `${base.origin}${base.prefix}`,
    me: meResource(ctx),
    documents: documentsResource(ctx),
    correspondence: correspondenceResource(ctx),
    plans: plansResource(ctx),
    apiKeys: apiKeysResource(ctx),
    webhookEndpoints: webhookEndpointsResource(ctx),
    webhookDeliveries: webhookDeliveriesResource(ctx),
    async close(): Promise<void> {
      if (ownsDispatcher) await dispatcher.close();
    },
    toJSON() {
      return { plane, baseUrl: `${base.origin}${base.prefix}` };
    },
  };
}
