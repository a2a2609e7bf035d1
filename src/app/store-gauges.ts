import type { Db } from '../db/types.js';
import { inboxStatusCounts } from '../inbox/read-queries.js';
import { storeSizing } from '../inbox/count-queries.js';
import { INBOX_STATUSES } from '../inbox/types.js';
import { countOpenGaps, countAtRiskFromLastRun, lastSuccessfulRun } from '../reconciler/state-gauges.js';
import { listCompleteness } from '../reconciler/completeness-queries.js';
import { latestProbes } from '../probe/probe-queries.js';
import type { Metrics } from '../metrics/metrics.js';

/**
 * Refreshes the gauges that describe the database rather than this process, just
 * before each scrape, so every replica reports the same truth and a restart or a
 * CLI run cannot reset them. Bounded in time (under a second, within a typical
 * scrape time-out): a slow, frozen or absent store turns postroom_store_up to 0
 * instead of failing or hanging the scrape (which would hide every
 * other metric behind a TargetDown).
 */
export async function refreshStoreGauges(metrics: Metrics, db: Db, timeoutMs = 800): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('store did not answer in time')), timeoutMs);
  });
  try {
    await Promise.race([read(metrics, withDeadline(db, Date.now() + timeoutMs)), deadline]);
    metrics.storeUp.set(1);
  } catch {
    metrics.storeUp.set(0);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The store as the gauge queries see it: each statement shares the scrape's
 * deadline and one that overruns has its connection abandoned, so a frozen store
 * does not pile stuck gauge queries onto the pool scrape after scrape.
 */
function withDeadline(db: Db, deadline: number): Db {
  return { ...db, query: (sql, params) => db.queryWithin(Math.max(1, deadline - Date.now()), sql, params) } as Db;
}

async function read(metrics: Metrics, db: Db): Promise<void> {
  const { by_status, oldestUnfinishedAgeSeconds } = await inboxStatusCounts(db);
  for (const status of INBOX_STATUSES) metrics.inboxEvents.set({ status }, by_status[status] ?? 0);
  metrics.inboxOldestUnfinishedAge.set(oldestUnfinishedAgeSeconds);
  metrics.reconcileGapsOpen.set(await countOpenGaps(db));
  const last = await lastSuccessfulRun(db);
  metrics.reconcileLastSuccess.set(last ? Math.floor(last.getTime() / 1000) : 0);
  metrics.reconcileAtRisk.set(await countAtRiskFromLastRun(db));
  const marks = await listCompleteness(db, 200);
  metrics.completeThrough.reset();
  for (const m of marks)
    metrics.completeThrough.set({ plane: m.plane, endpoint: m.endpoint_id }, Math.floor(m.complete_through.getTime() / 1000));
  const probes = await latestProbes(db, 200);
  metrics.probeUp.reset();
  metrics.probeLastSuccess.reset();
  for (const p of probes) {
    const labels = { plane: p.plane, endpoint: p.endpoint_id };
    metrics.probeUp.set(labels, p.outcome === 'ok' ? 1 : 0);
    metrics.probeLastSuccess.set(labels, p.last_ok_at ? Math.floor(p.last_ok_at.getTime() / 1000) : 0);
  }
  const sizing = await storeSizing(db);
  if (sizing) {
    metrics.storeEventIdIndexBytes.set(sizing.indexBytes);
    metrics.storeSharedBuffersBytes.set(sizing.sharedBuffersBytes);
  }
}
