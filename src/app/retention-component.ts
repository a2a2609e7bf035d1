import cron from 'node-cron';
import type { Role } from '../config/config.js';
import { ConfigError } from '../errors.js';
import { ensureInboxPartitions } from '../inbox/insert-queries.js';
import { runRetention } from '../inbox/retention.js';
import type { Component, ComponentDeps } from '../lifecycle/component.js';

/**
 * Retention inside `postroom serve` (roles all, worker and reconciler): at start, the next days'
 * partitions; then on POSTROOM_RETENTION_CRON (hourly by default), a retention run, which also keeps those
 * partitions ready. Runs never overlap in this process (noOverlap) nor across replicas (the advisory lock
 * inside runRetention: the replica that finds it held does nothing).
 */
export function retentionComponentFactory(deps: ComponentDeps, ctx: { role: Role }): Component | undefined {
  if (ctx.role === 'ingress') return undefined;
  const { config, db, logger } = deps;
  const { cron: expression, keepDays, archiveDir } = config.retention;
  if (!cron.validate(expression)) {
    throw new ConfigError('POSTROOM_RETENTION_CRON', `"${expression}" is not a cron expression (e.g. "7 * * * *" for every hour at :07)`);
  }
  let task: ReturnType<typeof cron.schedule> | undefined;
  let current: Promise<unknown> | undefined;
  return {
    name: 'retention',
    async start() {
      await ensureInboxPartitions(db).catch((err: unknown) =>
        logger.warn({ err }, 'could not create the next days’ inbox partitions; the next retention tick tries again'),
      );
      task = cron.schedule(
        expression,
        async () => {
          current = runRetention({ db, logger, keepDays, ...(archiveDir ? { archiveDir } : {}) })
            .then((report) => {
              for (const kept of report.kept) logger.warn({ partition: kept.partition, reason: kept.reason }, 'retention kept a partition');
            })
            .catch((err: unknown) => logger.error({ err }, 'retention run failed; the next tick retries'));
          await current;
          current = undefined;
        },
        { name: 'postroom-retention', noOverlap: true },
      );
      logger.info({ cron: expression, keep_days: keepDays, archive: archiveDir !== undefined }, 'retention scheduled');
    },
    async stop() {
      await task?.stop();
      await task?.destroy();
      // A run in progress finishes its partition: each drop is one short transaction.
      await current;
    },
  };
}
