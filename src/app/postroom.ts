import type express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Db } from '../db/types.js';
import { ConfigError } from '../errors.js';
import type { EventType } from '../events/catalogue.js';
import type { EventHandler, EveryEventHandler, HandlerMap, UnknownEventHandler } from '../events/handlers.js';
import { createHandlerRegistry } from '../events/registry.js';
import { recordConsumption } from '../worker/consumer-queries.js';
import type { InboxWriter } from '../inbox/group-commit.js';
import type { OnErrorHook } from '../events/event-error.js';
import { createIngress, type Ingress } from '../ingress/ingress.js';
import { staticSecrets, type SecretProvider } from '../secrets/secret-provider.js';
import type { SignedPayloadScheme } from '../signature/index.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { seriesOf, type PostroomMetrics } from '../metrics/metrics.js';
import { compareWithService, type ProjectionDifference, type ServiceCorrespondence } from '../projection/compare.js';
import { getProjectedCorrespondence, listOpenCorrespondenceIds, type ProjectedCorrespondence } from '../projection/read.js';
import type { WorkerOptions } from '../worker/options.js';
import { createWorker } from '../worker/worker.js';

export interface PostroomOptions<Api = unknown> {
  /** The store ingress writes to (Postgres, or the embedded store for development). Run `migrate(db)` first. */
  db: Db;
  handlers?: HandlerMap<Api>;
  logger?: Logger;
  /** From createMetrics: postroom's series on your registry. */
  metrics?: PostroomMetrics;
  /** The service API client, handed to handlers as ctx.api. */
  api?: Api;
  worker?: Partial<WorkerOptions>;
  workerId?: string;
  /** Signing secrets for router() and handler(): the endpoint's secret(s), or a provider (per-endpoint secrets). */
  secrets?: readonly string[] | SecretProvider;
  /**
   * Error reporting, like octokit's onError: called with a coded EventError and its
   * context when a handler fails, an event goes dead or one is quarantined (by the
   * worker, or by this instance's router()/handler()), after the outcome is committed.
   */
  onError?: OnErrorHook;
}

/** Receiving options of router() and handler(); each defaults as the standalone server does. */
export interface PostroomRouterOptions {
  /** Overrides the secrets given to createPostroom. */
  secrets?: readonly string[] | SecretProvider;
  toleranceSeconds?: number;
  maxBodyBytes?: number;
  scheme?: SignedPayloadScheme;
  ackTimeoutMs?: number;
  /** Rows per group-commit flush. */
  maxBatch?: number;
}

export interface Postroom<Api = unknown> {
  /** Handle one event type; `event.data` is typed by the type. Several handlers of a type run in order. */
  on<T extends EventType>(type: T, handler: EventHandler<T, Api>): Postroom<Api>;
  /** Catch-all for types the catalogue does not know; without one they are marked `skipped`. */
  onUnknown(handler: UnknownEventHandler<Api>): Postroom<Api>;
  /** Runs for every event, known or not, after its type's handlers. */
  onEvery(handler: EveryEventHandler<Api>): Postroom<Api>;
  /** Registers a handler map (`{ 'participant.acted': fn, '*': fn }`). */
  use(handlers: HandlerMap<Api>): Postroom<Api>;
  /**
   * The webhook route for your own Express app, writing to the same store:
   * `app.use('/hooks', postroom.router())`, mounted before any express.json().
   */
  router(options?: PostroomRouterOptions): express.Router;
  /**
   * The same webhook route as a plain Node listener, for any framework or none:
   * `http.createServer(postroom.handler())`, or `postroom.handler()(req, res, next)`
   * in front of another app (it calls `next` for paths that are not its own).
   */
  handler(
    options?: PostroomRouterOptions & {
      /** The path the handler answers (default `/webhooks`, and `/webhooks/{endpoint_id}`). */
      path?: string;
    },
  ): (req: IncomingMessage, res: ServerResponse, next?: () => void) => void;
  /** Starts the worker loops (LISTEN + polling). */
  start(): Promise<void>;
  /** Finishes handlers in flight within the deadline and releases the rest; flushes the routers' pending writes. */
  stop(deadlineMs?: number): Promise<void>;
  /** Processes until nothing is runnable right now, in the caller's loop. */
  drain(options?: { maxBatches?: number }): Promise<{
    /** Events whose transaction committed, by the status they reached. */
    by_status: Record<string, number>;
    batches: number;
  }>;
  /** The correspondence read model. */
  readonly projection: {
    get(correspondenceId: string): Promise<ProjectedCorrespondence | undefined>;
    listOpen(options: { after?: string; limit: number }): Promise<string[]>;
    compare(service: ServiceCorrespondence): Promise<ProjectionDifference[]>;
  };
}

/**
 * The library entry point: register typed handlers and run the worker in your
 * own Node process.
 *
 *   const postroom = createPostroom({ db });
 *   postroom.on('participant.acted', async (event, ctx) => {
 *     await ctx.tx.query('INSERT INTO acts (event_id, act) VALUES ($1, $2)', [event.event_id, event.data.act]);
 *   });
 *   app.use('/webhooks', postroom.router());   // optional: receive in the same app
 *   await postroom.start();
 */
export function createPostroom<Api = unknown>(options: PostroomOptions<Api>): Postroom<Api> {
  const registry = createHandlerRegistry<Api>();
  if (options.handlers) registry.use(options.handlers);
  const logger = options.logger ?? silentLogger();
  const metrics = options.metrics && seriesOf(options.metrics);
  const worker = createWorker<Api>({
    db: options.db,
    registry,
    logger,
    metrics,
    ...(options.api === undefined ? {} : { api: options.api }),
    ...(options.worker ? { options: options.worker } : {}),
    ...(options.workerId ? { workerId: options.workerId } : {}),
    onError: options.onError,
  });

  const writers: InboxWriter[] = [];
  // The reconciler reads which types are consumed from the store (it may run in another process).
  let consumptionRecorded: Promise<void> | undefined;
  const recordOnce = (): Promise<void> => (consumptionRecorded ??= recordConsumption(options.db, registry.consumption()));

  /** One ingress (its own group-commit writer, flushed by stop()) per router() or handler() call. */
  const receive = (receiveOptions: PostroomRouterOptions & { path?: string }): Ingress => {
    const given = receiveOptions.secrets ?? options.secrets;
    if (!given || (Array.isArray(given) && given.length === 0)) {
      throw new ConfigError(
        'secrets',
        'router() and handler() need the webhook signing secret(s): createPostroom({ db, secrets: [process.env.POSTROOM_WEBHOOK_SECRET] })',
      );
    }
    const secrets = Array.isArray(given) ? staticSecrets(given) : (given as SecretProvider);
    const { secrets: _given, ...tuning } = receiveOptions;
    const ingress = createIngress({ db: options.db, logger, metrics, secrets, onError: options.onError, ...tuning });
    writers.push(ingress.writer);
    return ingress;
  };

  const postroom: Postroom<Api> = {
    on(type, handler) {
      registry.on(type, handler);
      return postroom;
    },
    onUnknown(handler) {
      registry.onUnknown(handler);
      return postroom;
    },
    onEvery(handler) {
      registry.onEvery(handler);
      return postroom;
    },
    use(handlers) {
      registry.use(handlers);
      return postroom;
    },
    router(routerOptions = {}) {
      return receive(routerOptions).router;
    },
    handler(handlerOptions = {}) {
      return receive(handlerOptions).handler;
    },
    async start() {
      await recordOnce();
      await worker.start();
    },
    async stop(deadlineMs = 10_000) {
      await Promise.all(writers.map((w) => w.close()));
      await worker.stop(deadlineMs);
    },
    async drain(o) {
      await recordOnce();
      return worker.drain(o);
    },
    projection: {
      get: (id) => getProjectedCorrespondence(options.db, id),
      listOpen: (o) => listOpenCorrespondenceIds(options.db, o),
      compare: async (service) => compareWithService(await getProjectedCorrespondence(options.db, service.correspondence_id), service),
    },
  };
  return postroom;
}
