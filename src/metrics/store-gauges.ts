import type { Db } from '../db/types.js';
import { inboxStatusCounts } from '../inbox/read-queries.js';
import { INBOX_STATUSES } from '../inbox/types.js';
import { countOpenGaps, countAtRiskFromLastRun, lastSuccessfulRun } from '../reconciler/state-gauges.js';
import type { Metrics } from './metrics.js';

/**
 * Refreshes the gauges that describe the database rather than this process, just
 * before each scrape, so every replica reports the same truth and a restart or a
 * CLI run cannot reset them. Bounded in time: a slow or absent store turns
 * postroom_store_up to 0 instead of failing the scrape (which would hide every
 * other metric behind a TargetDown).
 */
export async function refreshStoreGauges(metrics: Metrics, db: Db, timeoutMs = 2000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('store did not answer in time')), timeoutMs);
  });
  try {
    await Promise.race([read(metrics, db), deadline]);
    metrics.storeUp.set(1);
  } catch {
    metrics.storeUp.set(0);
  } finally {
    clearTimeout(timer);
  }
}

async function read(metrics: Metrics, db: Db): Promise<void> {
  const { byStatus, oldestUnfinishedAgeSeconds } = await inboxStatusCounts(db);
  for (const status of INBOX_STATUSES) metrics.inboxEvents.set({ status }, byStatus[status] ?? 0);
  metrics.inboxOldestUnfinishedAge.set(oldestUnfinishedAgeSeconds);
  metrics.reconcileGapsOpen.set(await countOpenGaps(db));
  const last = await lastSuccessfulRun(db);
  metrics.reconcileLastSuccess.set(last ? Math.floor(last.getTime() / 1000) : 0);
  metrics.reconcileAtRisk.set(await countAtRiskFromLastRun(db));
}
