import type { Component, ComponentDeps } from '../lifecycle/component.js';
import { createApiClientFromConfig } from '../client/from-config.js';
import type { ApiClient } from '../client/client.js';
import type { Role } from '../config/config.js';
import { openDb } from '../db/open.js';
import type { Db } from '../db/types.js';
import { ConfigError } from '../errors.js';
import { createPostroom, type Postroom } from './postroom.js';
import { sentLedger } from '../reconciler/state-queries.js';
import { createForwarder, type Forwarder } from '../worker/forwarder.js';
import { loadHandlerModule } from './handler-module.js';
import { workerOptionsFromConfig } from '../worker/options.js';

export interface WorkerComponentOptions extends ComponentDeps {
  /** `--handlers <module>`, resolved against cwd. */
  handlersModule?: string | undefined;
  cwd?: string;
}

/**
 * The worker as a long-running part of `postroom serve`: user handlers from
 * `--handlers`, the forwarder when POSTROOM_FORWARD_URL is set, and the
 * projection always; handlers get the API client as ctx.api when
 * POSTROOM_API_BASE_URL is set. On Postgres it gets its own small pool so a
 * busy worker never starves ingress of connections.
 */
export function createWorkerComponent(deps: WorkerComponentOptions): Component {
  const { config, logger } = deps;
  let postroom: Postroom<ApiClient | undefined> | undefined;
  let api: ApiClient | undefined;
  let forwarder: Forwarder | undefined;
  let ownDb: Db | undefined;

  const release = async (): Promise<void> => {
    await forwarder?.close().catch(() => undefined);
    await api?.close().catch(() => undefined);
    await ownDb?.close().catch(() => undefined);
    forwarder = undefined;
    api = undefined;
    ownDb = undefined;
  };

  return {
    name: 'worker',
    async start() {
      const w = config.worker;
      if (w.forwardUrl && !w.forwardSecret) {
        throw new ConfigError(
          'POSTROOM_FORWARD_SECRET',
          'POSTROOM_FORWARD_URL is set, so forwarded events must be signed: set POSTROOM_FORWARD_SECRET to a long random string the receiving core also knows',
        );
      }
      try {
        if (deps.db.kind === 'postgres' && config.database.url) {
          ownDb = await openDb(config, logger, { poolSize: w.concurrency + 1, applicationName: 'postroom-worker' });
        }
        // Correspondence a handler sends through ctx.api goes into the sent ledger the reconciler re-reads.
        if (config.api.baseUrl)
          api = createApiClientFromConfig(config, { logger, metrics: deps.metrics, onCorrespondenceCreated: sentLedger(deps.db) });
        postroom = createPostroom<ApiClient | undefined>({
          db: ownDb ?? deps.db,
          logger,
          metrics: deps.metrics,
          api,
          worker: workerOptionsFromConfig(w),
        });
        if (deps.handlersModule) {
          const file = await loadHandlerModule(deps.handlersModule, postroom, deps.cwd ?? process.cwd());
          logger.info({ handlers: file }, 'handlers loaded');
        }
        if (w.forwardUrl && w.forwardSecret) {
          forwarder = createForwarder({ url: w.forwardUrl, secret: w.forwardSecret, timeoutMs: w.forwardTimeoutMs });
          postroom.onEvery(forwarder.handler);
          logger.info({ forward_url: new URL(w.forwardUrl).origin }, 'forwarding every verified event');
        }
        await postroom.start();
      } catch (err) {
        // startServer only stops components that started: release what this one opened.
        await release();
        throw err;
      }
    },
    async stop(deadlineMs) {
      try {
        await postroom?.stop(deadlineMs);
      } finally {
        await release();
      }
    },
  };
}

/** The ComponentFactory `postroom serve` calls: a worker for the roles all and worker. */
export function workerComponentFactory(deps: ComponentDeps, ctx: { role: Role; options: Record<string, unknown> }): Component | undefined {
  const handlers = typeof ctx.options.handlers === 'string' ? ctx.options.handlers : undefined;
  if (ctx.role !== 'all' && ctx.role !== 'worker') {
    if (handlers) deps.logger.warn({ role: ctx.role }, '--handlers is ignored: this role runs no worker');
    return undefined;
  }
  return createWorkerComponent({ ...deps, handlersModule: handlers });
}
