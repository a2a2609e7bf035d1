import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/types.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Console, ReconcileNow } from '../console/index.js';
import { createClosingServer } from './closing-server.js';

/** Where `serve` answers /console: nowhere, beside /metrics on the metrics listener, or on a listener of its own. */
export type ConsolePlacement = { kind: 'off'; hint: string } | { kind: 'metrics' } | { kind: 'own'; port: number; host: string };

export const CONSOLE_OFF_HINT =
  'the on-call console is off: to serve it on the admin listener, set POSTROOM_CONSOLE_TOKENS_FILE (lines role:name:token) ' +
  'or POSTROOM_CONSOLE_TRUSTED_USER_HEADER, and POSTROOM_CONSOLE_PORT or POSTROOM_METRICS_PORT; or run `postroom console` on your machine (docs/console.md)';

/**
 * The console never shares the public webhook listener. It is served where an operator's credentials
 * are configured and an admin listener exists, bound to POSTROOM_CONSOLE_HOST (127.0.0.1 unless set);
 * a metrics listener bound elsewhere (0.0.0.0 for Prometheus) is not reused for it.
 */
export function placeConsole(config: Config): ConsolePlacement {
  const c = config.console;
  if (c.tokensFile === undefined && c.trustedUserHeader === undefined) return { kind: 'off', hint: CONSOLE_OFF_HINT };
  const port = c.port ?? config.metricsPort;
  if (port === undefined)
    throw new ConfigError(
      'POSTROOM_CONSOLE_PORT',
      'a console credential is configured but there is no admin listener to serve it on: set POSTROOM_CONSOLE_PORT (its own listener) or POSTROOM_METRICS_PORT; the console is never served on the webhook port',
    );
  if (port !== config.metricsPort) return { kind: 'own', port, host: c.host };
  if (config.ingress.host !== c.host)
    throw new ConfigError(
      'POSTROOM_CONSOLE_PORT',
      `the console would share the metrics listener on ${config.ingress.host}:${port}, but it is to be bound to ${c.host}: set POSTROOM_CONSOLE_PORT to a port of its own, or POSTROOM_CONSOLE_HOST=${config.ingress.host} to serve it there on purpose`,
    );
  return { kind: 'metrics' };
}

/**
 * The console for `serve`, loaded only when configured (an ingress replica without it carries none of
 * its modules). "Reconcile now" runs a reconciler built as `postroom reconcile` builds one, under the
 * same cluster-wide lock as every replica's schedule; without the service API it says what to set.
 */
export async function buildConsole(deps: {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  localLogin?: { name: string; token: string } | undefined;
}): Promise<{ console: Console; close(): Promise<void> }> {
  const { config, db, logger } = deps;
  const { createConsole } = await import('../console/index.js');
  const hasKey = config.api.apiKey !== undefined || config.api.apiKeyFile !== undefined;
  let closeApi: (() => Promise<void>) | undefined;
  let reconcile: ReconcileNow;
  if (!config.api.baseUrl || !hasKey) {
    reconcile = { unavailable: 'Reconcile needs the service API: set POSTROOM_API_BASE_URL and POSTROOM_API_KEY.' };
  } else {
    const { createApiClientFromConfig } = await import('../client/from-config.js');
    const { createReconciler, reconcileDefaults } = await import('../reconciler/reconcile.js');
    const api = createApiClientFromConfig(config, { logger, metrics: deps.metrics });
    closeApi = () => api.close();
    const reconciler = createReconciler({ db, api, logger, clock: deps.clock, metrics: deps.metrics, defaults: reconcileDefaults(config) });
    reconcile = { run: (signal) => reconciler.run({ signal }) };
  }
  const served = createConsole({
    db,
    logger,
    config: config.console,
    orderingHoldSeconds: config.worker.orderingHoldSeconds,
    reconcile,
    clock: deps.clock,
    ...(deps.localLogin ? { localLogin: deps.localLogin } : {}),
  });
  return {
    console: served,
    async close() {
      await served.close();
      await closeApi?.().catch(() => undefined);
    },
  };
}

/** `postroom console`: the console alone, on its own listener, against whatever store the CLI opened. */
export async function startConsoleServer(options: {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  host: string;
  port: number;
  localLogin?: { name: string; token: string };
}): Promise<{ url: string; close(): Promise<void> }> {
  const built = await buildConsole(options);
  const served = built.console;
  const web = createClosingServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, (req, res) => {
    if (!served.handle(req, res)) {
      res.writeHead(302, { Location: '/console' }).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    web.server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new ConfigError('--port', `port ${options.port} on ${options.host} is already in use; pick another with --port`, { cause: err })
          : err,
      ),
    );
    web.server.listen(options.port, options.host, () => resolve());
  });
  const port = (web.server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/console`,
    async close() {
      await web.close(500);
      await built.close();
    },
  };
}
