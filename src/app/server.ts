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
import { secretCipherFromConfig } from '../secrets/from-config.js';
import { createEndpointSecretProvider, type EndpointSecretProvider } from '../secrets/provider.js';
import type { Component, ComponentDeps } from '../lifecycle/component.js';
import type { Logger } from '../logging/logger.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { VERSION } from '../version.js';
import { loadOrCreateDevSecret } from './dev-secret.js';
import { createClosingServer, type ClosingServer } from './closing-server.js';
import { createHttpApp, metricsText } from './http-app.js';
import { buildConsole, placeConsole } from './console-listener.js';
import { createReadiness } from './readiness.js';
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

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const { config, logger } = options;
  const role = options.role ?? 'all';
  const clock = options.clock ?? systemClock;

  let devSecret: RunningServer['devSecret'];
  const onPostgres = options.db ? options.db.kind === 'postgres' : config.database.url !== undefined;
  let secrets = options.secrets;
  // With POSTROOM_ENCRYPTION_KEY, /webhooks/{endpoint_id} verifies with the endpoint's stored secrets (built once the store is open).
  const cipher = !secrets && runsIngress(role) ? secretCipherFromConfig(config) : undefined;
  let configuredSecrets: string[] = [];
  if (!secrets && runsIngress(role)) {
    if (config.ingress.secrets.length > 0) {
      configuredSecrets = config.ingress.secrets;
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
      configuredSecrets = [devSecret.secret];
    }
    if (!cipher) secrets = staticSecrets(configuredSecrets);
  }
  let endpointSecrets: EndpointSecretProvider | undefined;
  // Before anything opens: a console configured where it cannot be served is a configuration error.
  const placement = placeConsole(config);

  const ownsDb = options.db === undefined;
  const db = options.db ?? (await openDb(config, logger));
  const metrics = createMetrics({ version: VERSION });
  let writer: InboxWriter | undefined;
  const components: Component[] = [];
  let gate: SchemaGate | undefined;
  let web: ClosingServer | undefined;
  let metricsWeb: ClosingServer | undefined;
  let consoleWeb: ClosingServer | undefined;
  let consoleApp: Awaited<ReturnType<typeof buildConsole>> | undefined;

  try {
    if (options.migrate !== false) await migrate(db, { logger });
    if (cipher) {
      endpointSecrets = createEndpointSecretProvider({ db, cipher, configured: configuredSecrets, clock, logger });
      await endpointSecrets.start();
      secrets = endpointSecrets;
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
      writer = ingress.writer;
    }
    const readiness = createReadiness(db, {
      ...(writer ? { writer, ackBudgetMs: config.ingress.ackTimeoutMs } : {}),
      components: () => gate?.state(),
    });
    const scrape = { metrics, beforeScrape: () => refreshStoreGauges(metrics, db) };
    const app = createHttpApp({
      logger,
      readiness,
      ...(config.metricsPort === undefined ? { metrics: scrape } : {}),
    });

    web = createClosingServer(
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
    const server = web.server;
    server.keepAliveTimeout = 5000;
    server.maxHeadersCount = 200;
    await listen(server, config.ingress.port, config.ingress.host);
    if (placement.kind === 'off') logger.info(placement.hint);
    else consoleApp = await buildConsole({ config, db, logger, metrics, clock });
    const admin = consoleApp?.console;
    if (placement.kind === 'own') {
      consoleWeb = createClosingServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, (req, res) => {
        if (!admin!.handle(req, res)) res.writeHead(404).end();
      });
      await listen(consoleWeb.server, placement.port, placement.host);
      logger.info(
        { url: `http://${hostForUrl(placement.host)}:${(consoleWeb.server.address() as AddressInfo).port}/console` },
        'console is serving',
      );
    }
    if (config.metricsPort !== undefined) {
      const withConsole = placement.kind === 'metrics' ? admin : undefined;
      metricsWeb = createClosingServer({}, (req, res) => {
        if (withConsole?.handle(req, res)) return;
        if (req.url !== '/metrics') {
          res.writeHead(404).end();
          return;
        }
        metricsText(scrape).then(
          (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
          (err) => res.writeHead(500).end(describeError(err)),
        );
      });
      await listen(metricsWeb.server, config.metricsPort, config.ingress.host);
      if (withConsole)
        logger.info(
          { url: `http://${hostForUrl(config.ingress.host)}:${(metricsWeb.server.address() as AddressInfo).port}/console` },
          'console is serving',
        );
    }

    const deps: ComponentDeps = { config, db, logger, metrics, clock };
    const startComponents = async (): Promise<void> => {
      for (const make of options.components ?? []) {
        const c = await make(deps);
        if (c) {
          await c.start();
          components.push(c);
        }
      }
    };
    // undefined: nothing waits; otherwise what is pending (empty when the store could not be read).
    const pendingAtStart =
      options.migrate === false && (options.components?.length ?? 0) > 0
        ? await migrationStatus(db).then(
            (s) => (s.current ? undefined : s.pending),
            () => [],
          )
        : undefined;
    if (pendingAtStart) {
      gate = createSchemaGate({
        db,
        logger,
        start: startComponents,
        pending: pendingAtStart,
        ...(options.schemaCheckIntervalMs === undefined ? {} : { intervalMs: options.schemaCheckIntervalMs }),
      });
      gate.done.catch((err: unknown) => logger.error({ err }, 'the worker and reconciler could not start'));
    } else {
      await startComponents();
    }

    const port = (server.address() as AddressInfo).port;
    const host = hostForUrl(config.ingress.host);
    let closing: Promise<void> | undefined;
    const closingWeb = web;
    return {
      url: `http://${host}:${port}`,
      port,
      db,
      metrics,
      devSecret,
      close() {
        closing ??= (async () => {
          const deadline = Date.now() + config.shutdownTimeoutMs;
          readiness.setDraining();
          await closingWeb.close(Math.max(100, deadline - Date.now() - 1000));
          if (metricsWeb) await metricsWeb.close(500);
          if (consoleWeb) await consoleWeb.close(500);
          await consoleApp?.close();
          await writer?.close();
          await endpointSecrets?.close().catch(() => undefined);
          // Components still waiting for migrations never start; one starting now finishes first, then stops.
          gate?.stop();
          await gate?.done.catch(() => undefined);
          for (const c of components.reverse()) {
            await c
              .stop(Math.max(100, deadline - Date.now() - 500))
              .catch((err) => logger.error({ err, component: c.name }, 'component did not stop cleanly'));
          }
          if (ownsDb) await db.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    gate?.stop();
    await gate?.done.catch(() => undefined);
    for (const c of components) await c.stop(1000).catch(() => undefined);
    await endpointSecrets?.close().catch(() => undefined);
    if (web?.server.listening) web.server.close();
    if (metricsWeb?.server.listening) metricsWeb.server.close();
    if (consoleWeb?.server.listening) consoleWeb.server.close();
    await consoleApp?.close().catch(() => undefined);
    if (ownsDb) await db.close().catch(() => undefined);
    throw err;
  }
}

const hostForUrl = (host: string): string => (host.includes(':') ? `[${host}]` : host);

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
