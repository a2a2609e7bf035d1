import type { Db } from '../db/types.js';
import { inboxStatusCounts } from '../inbox/read-queries.js';
import { INBOX_STATUSES } from '../inbox/types.js';
import type { Metrics } from './metrics.js';

/** Refreshes the database-derived gauges; called just before each scrape. */
export async function refreshInboxGauges(metrics: Metrics, db: Db): Promise<void> {
  const { byStatus, oldestUnfinishedAgeSeconds } = await inboxStatusCounts(db);
  for (const status of INBOX_STATUSES) metrics.inboxEvents.set({ status }, byStatus[status] ?? 0);
  metrics.inboxOldestUnfinishedAge.set(oldestUnfinishedAgeSeconds);
}
