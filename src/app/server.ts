import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../clock.js';
import type { Config, Role } from '../config/config.js';
import { migrate, migrationStatus } from '../db/migrate.js';
import { openDb } from '../db/open.js';
import type { Db } from '../db/types.js';
import { ConfigError, describeError } from '../errors.js';
import type { InboxWriter } from '../inbox/group-commit.js';
import { createIngress, type Ingress } from '../ingress/ingress.js';
import { staticSecrets, type SecretProvider } from '../secrets/secret-provider.js';
import type { SecretCipher } from '../secrets/crypto.js';
import { secretCipherFromConfig } from '../secrets/from-config.js';
import { createEndpointSecretProvider, type EndpointSecretProvider } from '../secrets/provider.js';
import type { Component, ComponentDeps } from '../lifecycle/component.js';
import type { Logger } from '../logging/logger.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { VERSION } from '../version.js';
import { loadOrCreateDevSecret } from './dev-secret.js';
import { createClosingServer, type ClosingServer } from './closing-server.js';
import { buildConsole, placeConsole } from './console-listener.js';
import { createHttpApp, metricsText } from './http-app.js';
import { createReadiness, type Readiness } from './readiness.js';
import { createSchemaGate, type SchemaGate } from './schema-gate.js';
import { refreshStoreGauges } from './store-gauges.js';

export interface ServeOptions {
  config: Config;
  logger: Logger;
  role?: Role;
  /** Apply pending migrations before serving (default true). */
  migrate?: boolean;
  clock?: Clock;
  /** Use this store instead of opening one from config (tests, embedding). */
  db?: Db;
  /**
   * Secrets provider; defaults to the configured list (or the development secret), and with
   * POSTROOM_ENCRYPTION_KEY to the stored per-endpoint secrets for /webhooks/{endpoint_id}.
   */
  secrets?: SecretProvider;
  /**
   * Extra components for the worker and reconciler roles, built once the store is open. With
   * `migrate: false` they start only once the store has every migration of this build (schema-gate.ts).
   */
  components?: Array<(deps: ComponentDeps) => Component | undefined | Promise<Component | undefined>>;
  /** With `migrate: false`: how often to look for the missing migrations (default 2 s). */
  schemaCheckIntervalMs?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  db: Db;
  metrics: Metrics;
  devSecret: { secret: string; file: string; created: boolean } | undefined;
  /** Graceful: stop taking requests, finish in-flight ones, stop components, close the store. */
  close(): Promise<void>;
}

const runsIngress = (role: Role): boolean => role === 'all' || role === 'ingress';

/** What a server has started so far: closed in reverse when it stops, or when starting fails half way. */
interface Started {
  writer: InboxWriter | undefined;
  endpointSecrets: EndpointSecretProvider | undefined;
  components: Component[];
  gate: SchemaGate | undefined;
  web: ClosingServer | undefined;
  metricsWeb: ClosingServer | undefined;
  consoleWeb: ClosingServer | undefined;
  consoleApp: Awaited<ReturnType<typeof buildConsole>> | undefined;
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const { config, logger } = options;
  const role = options.role ?? 'all';
  const clock = options.clock ?? systemClock;
  const onPostgres = options.db ? options.db.kind === 'postgres' : config.database.url !== undefined;
  const signing = signingSecrets(options, role, onPostgres);
  let secrets = signing.secrets;
  // Before anything opens: a console configured where it cannot be served is a configuration error.
  const placement = placeConsole(config);

  const ownsDb = options.db === undefined;
  const db = options.db ?? (await openDb(config, logger));
  const metrics = createMetrics({ version: VERSION });
  const started: Started = {
    writer: undefined,
    endpointSecrets: undefined,
    components: [],
    gate: undefined,
    web: undefined,
    metricsWeb: undefined,
    consoleWeb: undefined,
    consoleApp: undefined,
  };

  try {
    if (options.migrate !== false) await migrate(db, { logger, history: 'leave' });
    if (signing.cipher) {
      started.endpointSecrets = createEndpointSecretProvider({ db, cipher: signing.cipher, configured: signing.configured, clock, logger });
      await started.endpointSecrets.start();
      secrets = started.endpointSecrets;
    }

    let ingress: Ingress | undefined;
    if (runsIngress(role) && secrets) {
      ingress = createIngress({
        db,
        secrets,
        logger,
        metrics,
        clock,
        maxBatch: config.ingress.maxBatch,
        toleranceSeconds: config.ingress.toleranceSeconds,
        scheme: config.ingress.signedPayload,
        ackTimeoutMs: config.ingress.ackTimeoutMs,
        maxBodyBytes: config.ingress.maxBodyBytes,
      });
      started.writer = ingress.writer;
    }
    const readiness = createReadiness(db, {
      ...(started.writer ? { writer: started.writer, ackBudgetMs: config.ingress.ackTimeoutMs } : {}),
      components: () => started.gate?.state(),
    });
    const scrape = { metrics, beforeScrape: () => refreshStoreGauges(metrics, db) };
    const app = createHttpApp({ logger, readiness, ...(config.metricsPort === undefined ? { metrics: scrape } : {}) });
    if (placement.kind === 'off') logger.info(placement.hint);
    else started.consoleApp = await buildConsole({ config, db, logger, metrics, clock });
    const web = await listenForRequests(config, started, ingress, app, scrape);
    await listenForConsole(config, logger, placement, started);
    await startComponents(options, { config, db, logger, metrics, clock }, started);

    const port = (web.server.address() as AddressInfo).port;
    const host = hostForUrl(config.ingress.host);
    let closing: Promise<void> | undefined;
    return {
      url: `http://${host}:${port}`,
      port,
      db,
      metrics,
      devSecret: signing.devSecret,
      close() {
        closing ??= closeServer(config, logger, readiness, web, started, ownsDb ? db : undefined);
        return closing;
      },
    };
  } catch (err) {
    started.gate?.stop();
    await started.gate?.done.catch(() => undefined);
    for (const c of started.components) await c.stop(1000).catch(() => undefined);
    await started.endpointSecrets?.close().catch(() => undefined);
    if (started.web?.server.listening) started.web.server.close();
    if (started.metricsWeb?.server.listening) started.metricsWeb.server.close();
    if (started.consoleWeb?.server.listening) started.consoleWeb.server.close();
    await started.consoleApp?.close().catch(() => undefined);
    if (ownsDb) await db.close().catch(() => undefined);
    throw err;
  }
}

/**
 * The secrets ingress verifies with: the provider given, else the configured list (or, on the embedded
 * store outside production, the development secret). With POSTROOM_ENCRYPTION_KEY, /webhooks/{endpoint_id}
 * verifies with the endpoint's stored secrets instead: `cipher` is set, and the provider is built once the
 * store is open.
 */
function signingSecrets(
  options: ServeOptions,
  role: Role,
  onPostgres: boolean,
): { secrets: SecretProvider | undefined; cipher: SecretCipher | undefined; configured: string[]; devSecret: RunningServer['devSecret'] } {
  const { config } = options;
  let secrets = options.secrets;
  const cipher = !secrets && runsIngress(role) ? secretCipherFromConfig(config) : undefined;
  let configured: string[] = [];
  let devSecret: RunningServer['devSecret'];
  if (!secrets && runsIngress(role)) {
    if (config.ingress.secrets.length > 0) {
      configured = config.ingress.secrets;
    } else if (config.production || onPostgres) {
      // A development secret lives in the embedded store's folder; a Postgres deployment writes nothing there.
      if (!cipher) {
        throw new ConfigError(
          'POSTROOM_WEBHOOK_SECRETS',
          'no webhook signing secret configured; set it to the secret the service returned when the endpoint was created (comma-separate several during rotation), or set POSTROOM_ENCRYPTION_KEY and manage endpoints with `postroom endpoints create`',
        );
      }
    } else {
      devSecret = loadOrCreateDevSecret(config.database.dataDir);
      configured = [devSecret.secret];
    }
    if (!cipher) secrets = staticSecrets(configured);
  }
  return { secrets, cipher, configured, devSecret };
}

/** The HTTP server (and the metrics server on its own port, when configured), listening. */
async function listenForRequests(
  config: Config,
  started: Started,
  ingress: Ingress | undefined,
  app: http.RequestListener,
  scrape: Parameters<typeof metricsText>[0],
): Promise<ClosingServer> {
  const web = createClosingServer(
    {
      requestTimeout: config.ingress.requestTimeoutMs,
      headersTimeout: Math.min(config.ingress.requestTimeoutMs, 10_000),
      // Node enforces the two time-outs above only when it checks, every 30 s by default:
      // a slow-drip body would hold its socket far longer than configured.
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(config.ingress.requestTimeoutMs / 4))),
    },
    // Every /webhooks target is answered by the framework-free handler; probes, metrics and 404s by the app.
    ingress ? (req, res) => ingress.handler(req, res, () => app(req, res)) : app,
  );
  started.web = web;
  web.server.keepAliveTimeout = 5000;
  web.server.maxHeadersCount = 200;
  await listen(web.server, config.ingress.port, config.ingress.host);
  if (config.metricsPort !== undefined) {
    // The console beside /metrics when it is placed there (placeConsole); never on the webhook listener above.
    const withConsole = placeConsole(config).kind === 'metrics' ? started.consoleApp?.console : undefined;
    const metricsWeb = createClosingServer({}, (req, res) => {
      if (withConsole?.handle(req, res)) return;
      if (req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      metricsText(scrape).then(
        (text) => res.writeHead(200, { 'Content-Type': scrape.metrics.registry.contentType }).end(text),
        (err) => res.writeHead(500).end(describeError(err)),
      );
    });
    started.metricsWeb = metricsWeb;
    await listen(metricsWeb.server, config.metricsPort, config.ingress.host);
  }
  return web;
}

/** The console on a listener of its own, when placed there; says where it serves in either case. */
async function listenForConsole(
  config: Config,
  logger: Logger,
  placement: ReturnType<typeof placeConsole>,
  started: Started,
): Promise<void> {
  const admin = started.consoleApp?.console;
  if (!admin) return;
  if (placement.kind === 'own') {
    const consoleWeb = createClosingServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, (req, res) => {
      if (!admin.handle(req, res)) res.writeHead(404).end();
    });
    started.consoleWeb = consoleWeb;
    await listen(consoleWeb.server, placement.port, placement.host);
    logger.info(
      { url: `http://${hostForUrl(placement.host)}:${(consoleWeb.server.address() as AddressInfo).port}/console` },
      'console is serving',
    );
  } else if (placement.kind === 'metrics' && started.metricsWeb) {
    logger.info(
      { url: `http://${hostForUrl(config.ingress.host)}:${(started.metricsWeb.server.address() as AddressInfo).port}/console` },
      'console is serving',
    );
  }
}

const hostForUrl = (host: string): string => (host.includes(':') ? `[${host}]` : host);

/** Starts the extra components now, or, with `migrate: false` and migrations pending, once the schema gate opens. */
async function startComponents(options: ServeOptions, deps: ComponentDeps, started: Started): Promise<void> {
  const start = async (): Promise<void> => {
    for (const make of options.components ?? []) {
      const c = await make(deps);
      if (c) {
        await c.start();
        started.components.push(c);
      }
    }
  };
  // undefined: nothing waits; otherwise what is pending (empty when the store could not be read).
  const pendingAtStart =
    options.migrate === false && (options.components?.length ?? 0) > 0
      ? await migrationStatus(deps.db).then(
          (s) => (s.current ? undefined : s.pending),
          () => [],
        )
      : undefined;
  if (!pendingAtStart) return start();
  const gate = createSchemaGate({
    db: deps.db,
    logger: deps.logger,
    start,
    pending: pendingAtStart,
    ...(options.schemaCheckIntervalMs === undefined ? {} : { intervalMs: options.schemaCheckIntervalMs }),
  });
  started.gate = gate;
  gate.done.catch((err: unknown) => deps.logger.error({ err }, 'the worker and reconciler could not start'));
}

/** Graceful: stop taking requests, finish in-flight ones, stop components, close the store (when owned). */
async function closeServer(
  config: Config,
  logger: Logger,
  readiness: Readiness,
  web: ClosingServer,
  started: Started,
  ownedDb: Db | undefined,
): Promise<void> {
  const deadline = Date.now() + config.shutdownTimeoutMs;
  readiness.setDraining();
  await web.close(Math.max(100, deadline - Date.now() - 1000));
  if (started.metricsWeb) await started.metricsWeb.close(500);
  if (started.consoleWeb) await started.consoleWeb.close(500);
  await started.consoleApp?.close();
  await started.writer?.close();
  await started.endpointSecrets?.close().catch(() => undefined);
  // Components still waiting for migrations never start; one starting now finishes first, then stops.
  started.gate?.stop();
  await started.gate?.done.catch(() => undefined);
  for (const c of started.components.reverse()) {
    await c
      .stop(Math.max(100, deadline - Date.now() - 500))
      .catch((err) => logger.error({ err, component: c.name }, 'component did not stop cleanly'));
  }
  if (ownedDb) await ownedDb.close();
}

function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(
        err.code === 'EADDRINUSE'
          ? new ConfigError('PORT', `port ${port} on ${host} is already in use; stop the other process or set PORT to a free port`, {
              cause: err,
            })
          : err,
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
