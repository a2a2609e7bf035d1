import { createApiClientFromConfig } from '../client/from-config.js';
import type { Role } from '../config/config.js';
import type { Component, ComponentDeps } from '../lifecycle/component.js';
import { runProbe } from '../probe/probe.js';

export const PROBE_LOCK = 'probe';

/**
 * The scheduled probe inside `postroom serve` (roles all and reconciler), when POSTROOM_PROBE_INTERVAL_SECONDS
 * is set. Each tick, the replica that takes the probe lock probes every active endpoint; the others skip the
 * tick. Off on the live plane unless POSTROOM_PROBE_LIVE=true.
 */
export function probeComponentFactory(deps: ComponentDeps, ctx: { role: Role }): Component | undefined {
  if (ctx.role !== 'all' && ctx.role !== 'reconciler') return undefined;
  const { config, logger, db } = deps;
  if (config.probe.intervalMs === 0) return undefined;
  const hasKey = config.api.apiKey !== undefined || config.api.apiKeyFile !== undefined;
  if (!config.api.baseUrl || !hasKey) {
    logger.warn('the scheduled probe is off: it needs POSTROOM_API_BASE_URL and POSTROOM_API_KEY');
    return undefined;
  }
  const api = createApiClientFromConfig(config, { logger, metrics: deps.metrics });
  if (api.plane === 'live' && !config.probe.live) {
    logger.warn('the scheduled probe is off on the live plane: set POSTROOM_PROBE_LIVE=true to probe live endpoints');
    void api.close();
    return undefined;
  }
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  let stopped = false;

  const tick = async (): Promise<void> => {
    try {
      const result = await db.withAdvisoryLock(
        PROBE_LOCK,
        () =>
          runProbe(
            { db, api, logger, clock: deps.clock, metrics: deps.metrics },
            { timeoutMs: config.probe.timeoutMs, allowLive: config.probe.live },
          ),
        { wait: false },
      );
      if (result.acquired && result.value.ok)
        logger.debug(
          { endpoints: result.value.endpoints.map((e) => ({ endpoint_id: e.endpoint_id, outcome: e.outcome })) },
          'probe finished',
        );
    } catch (err) {
      logger.error({ err }, 'probe failed to run; the next tick tries again');
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = tick().finally(() => {
        current = undefined;
        schedule();
      });
    }, config.probe.intervalMs);
    timer.unref();
  };

  return {
    name: 'probe',
    async start() {
      schedule();
      logger.info({ every_seconds: config.probe.intervalMs / 1000, plane: api.plane }, 'probe scheduled');
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
      await api.close().catch(() => undefined);
    },
  };
}
