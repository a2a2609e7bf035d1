import type { Component, ComponentDeps } from '../lifecycle/component.js';
import { createApiClientFromConfig } from '../client/from-config.js';
import type { Role } from '../config/config.js';
import { ConfigError } from '../errors.js';
import { createReconciler, reconcileDefaults } from '../reconciler/reconcile.js';
import { createReconcileSchedule } from '../reconciler/schedule.js';

/**
 * The reconciler inside `postroom serve` (roles all and reconciler). It needs the
 * service API; without it the all-in-one role runs without reconciling (and says
 * so), while the dedicated role refuses to start.
 */
export function reconcilerComponentFactory(deps: ComponentDeps, ctx: { role: Role }): Component | undefined {
  if (ctx.role !== 'all' && ctx.role !== 'reconciler') return undefined;
  const { config, logger } = deps;
  const hasKey = config.api.apiKey !== undefined || config.api.apiKeyFile !== undefined;
  if (!config.api.baseUrl || !hasKey) {
    const missing = !config.api.baseUrl ? 'POSTROOM_API_BASE_URL' : 'POSTROOM_API_KEY';
    if (ctx.role === 'reconciler')
      throw new ConfigError(
        missing,
        'the reconciler talks to the service API: set POSTROOM_API_BASE_URL and POSTROOM_API_KEY (or POSTROOM_API_KEY_FILE)',
      );
    logger.warn({ missing }, 'reconciler is off: set POSTROOM_API_BASE_URL and POSTROOM_API_KEY to reconcile missed events');
    return undefined;
  }
  const api = createApiClientFromConfig(config, { logger, metrics: deps.metrics });
  const reconciler = createReconciler({
    db: deps.db,
    api,
    logger,
    clock: deps.clock,
    metrics: deps.metrics,
    defaults: reconcileDefaults(config),
  });
  const schedule = createReconcileSchedule({ reconciler, expression: config.reconcileCron, logger });
  return {
    name: 'reconciler',
    async start() {
      await schedule.start();
      logger.info({ cron: config.reconcileCron, plane: api.plane }, 'reconciler scheduled');
    },
    async stop(deadlineMs) {
      try {
        await schedule.stop(deadlineMs);
      } finally {
        await api.close().catch(() => undefined);
      }
    },
  };
}
