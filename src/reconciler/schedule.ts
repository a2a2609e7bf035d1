import cron from 'node-cron';
import type { Component } from '../lifecycle/component.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import type { Reconciler } from './reconcile.js';

/**
 * The reconciler inside `postroom serve`: a node-cron schedule whose ticks never
 * overlap in this process, and whose runs never overlap across replicas (the
 * advisory lock inside Reconciler.run).
 */
export function createReconcileSchedule(options: { reconciler: Reconciler; expression: string; logger: Logger }): Component {
  if (!cron.validate(options.expression)) {
    throw new ConfigError(
      'POSTROOM_RECONCILE_CRON',
      `"${options.expression}" is not a cron expression (e.g. "*/5 * * * *" for every 5 minutes)`,
    );
  }
  let task: ReturnType<typeof cron.schedule> | undefined;
  let current: Promise<unknown> | undefined;
  const abort = new AbortController();
  return {
    name: 'reconciler',
    async start() {
      task = cron.schedule(
        options.expression,
        async () => {
          current = options.reconciler
            .run({ signal: abort.signal })
            .catch((err) => options.logger.error({ err }, 'reconcile run failed; the next tick retries'));
          await current;
          current = undefined;
        },
        { name: 'postroom-reconcile', noOverlap: true },
      );
    },
    async stop(deadlineMs) {
      await task?.stop();
      await task?.destroy();
      if (current) {
        const timer = setTimeout(() => abort.abort(new Error('shutting down')), Math.max(0, deadlineMs - 200));
        await current;
        clearTimeout(timer);
      }
    },
  };
}
