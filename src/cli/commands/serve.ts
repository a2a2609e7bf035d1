import { Option, type Command } from 'commander';
import { applyHeapGrowth } from '../../app/heap-growth.js';
import { ROLES, type Role } from '../../config/config.js';
import type { ComponentDeps, Component } from '../../lifecycle/component.js';
import { createLogger } from '../../logging/logger.js';
import { configuredSecretValues, type CliContext } from '../context.js';
import { parseChoice, parseCount } from '../duration.js';
import { waitForSignal } from '../signals.js';

/** Components that roles contribute (worker, reconciler); filled in by those domains. */
export type ComponentFactory = (
  deps: ComponentDeps,
  ctx: { role: Role; options: Record<string, unknown> },
) => Component | undefined | Promise<Component | undefined>;

/**
 * The components a role runs, loaded only for that role: an ingress replica
 * does not carry the worker, the reconciler or the API client in its heap
 * (test/app/role-modules.test.ts).
 */
async function serveComponents(role: Role): Promise<ComponentFactory[]> {
  const factories: ComponentFactory[] = [];
  if (role === 'all' || role === 'worker') factories.push((await import('../../app/worker-component.js')).workerComponentFactory);
  if (role === 'all' || role === 'reconciler') {
    factories.push((await import('../../app/reconciler-component.js')).reconcilerComponentFactory);
    factories.push((await import('../../app/probe-component.js')).probeComponentFactory);
  }
  if (role !== 'ingress') factories.push((await import('../../app/retention-component.js')).retentionComponentFactory);
  return factories;
}

export function registerServeCommand(program: Command, ctx: CliContext): void {
  program
    .command('serve')
    .description('Run the receiver (and, by role, the worker and reconciler) until SIGTERM.')
    .addOption(new Option('--role <role>', 'what this process does').choices(ROLES).default('all'))
    .option('--no-migrate', 'do not apply pending migrations at start (run `postroom migrate` as a separate step)')
    .option('--port <n>', 'listen port (overrides PORT; default 8080)')
    .option('--host <addr>', 'listen address (overrides HOST; default 127.0.0.1)')
    .option(
      '--handlers <module>',
      'a JS module whose default export is a handler map or a function (postroom) => void (roles all and worker); see docs/worker.md',
    )
    .addHelpText(
      'after',
      `
Examples:
  $ postroom serve                                  everything in one process, embedded store in ./.postroom
  $ DATABASE_URL=postgres://… POSTROOM_WEBHOOK_SECRETS=whsec_… postroom serve --role ingress --no-migrate
  $ postroom serve --role worker                    scale processing apart from ingress
  $ postroom serve --handlers ./handlers.js         run your handlers in the worker (docs/worker.md)
  $ POSTROOM_FORWARD_URL=http://core.internal/events POSTROOM_FORWARD_SECRET=… postroom serve
                                                    forward every verified event to a non-Node core

Traces: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://otel-collector:4318) to export spans over OTLP/HTTP;
OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or http/json), OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER and
OTEL_TRACES_SAMPLER_ARG as the OpenTelemetry specification defines them (docs/observability.md).

Without DATABASE_URL the embedded development store is used (single process, not crash-durable).
Without POSTROOM_WEBHOOK_SECRETS (outside production) a development secret is generated and kept in the data folder.`,
    )
    .action(async (opts: { role: string; migrate: boolean; port?: string; host?: string; handlers?: string }) => {
      const role = parseChoice('--role', opts.role, ROLES);
      const config = ctx.config();
      if (opts.port !== undefined) config.ingress.port = parseCount('--port', opts.port, { min: 0, max: 65535 });
      if (opts.host !== undefined) config.ingress.host = opts.host;
      const pretty = !config.production && Boolean(process.stdout.isTTY);
      const logger = createLogger({ level: config.logLevel, pretty, secretValues: configuredSecretValues(config) });
      const heap = applyHeapGrowth(config.heapGrowingPercent);
      // Before the server: its modules take the tracer proxy, which finds the provider once registered.
      const tracing = config.tracing.enabled
        ? await (await import('../../app/tracing.js')).startTracing(config.tracing, logger)
        : undefined;
      const { startServer } = await import('../../app/server.js');
      const server = await startServer({
        config,
        logger,
        role,
        migrate: opts.migrate,
        components: (await serveComponents(role)).map((make) => (deps: ComponentDeps) => make(deps, { role, options: opts })),
      });
      logger.info(
        { url: server.url, role, store: server.db.kind, heap_growing: heap.source, heap_growing_percent: heap.percent },
        'postroom is serving',
      );
      if (server.devSecret) {
        const io = ctx.io;
        io.stdout.write(
          `\npostroom is receiving webhooks at ${server.url}/webhooks (embedded store in ${config.database.dataDir}).\n` +
            `A development signing secret ${server.devSecret.created ? 'was generated' : 'is kept'} in ${server.devSecret.file}.\n` +
            `Send a signed sample event:\n\n    npx postroom send-sample --url ${server.url}/webhooks\n\n`,
        );
      }
      await waitForSignal();
      logger.info('shutting down');
      await server.close();
      await tracing?.shutdown();
      logger.info('stopped');
    });
}
