import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { archivePartition } from './archive.js';
import { ensureInboxPartitions } from './insert-queries.js';
import { dropInboxPartition, eventsNeedingWork, listInboxPartitions, type InboxPartition } from './partition-queries.js';

/**
 * Retention of the inbox's history: whole days (partitions) older than the retention are detached and
 * dropped, each in a transaction of its own, and nothing is rewritten row by row, so the cost of a run is
 * the same at any age and leaves no dead rows to vacuum. A partition holding an event that needs work or
 * attention is kept, with the reason; with an archive folder, a partition is written out first, and kept
 * when that fails. Each run also creates the next days' partitions.
 */

export interface RetentionOptions {
  db: Db;
  logger: Logger;
  /** Days of history kept: a partition goes once its whole day is more than this many days before today (UTC). */
  keepDays: number;
  /** Where each partition is archived before it is dropped; none: no archive. */
  archiveDir?: string;
  dryRun?: boolean;
  now?: Date;
  /** How long DETACH may wait for the inbox's lock before this partition is left for the next run. */
  lockTimeoutMs?: number;
  onProgress?: (message: string) => void;
}

export interface RetentionPartition {
  partition: string;
  day: string;
  bytes: number;
  estimated_rows: number;
}

export interface RetentionReport {
  dry_run: boolean;
  keep_days: number;
  /** Partitions of days before this one (UTC) are past retention. */
  cutoff_day: string;
  partitions_created: number;
  dropped: Array<RetentionPartition & { archive?: string }>;
  kept: Array<RetentionPartition & { reason: string; needing_work?: Record<string, number> }>;
  /** Another replica held the retention lock: this run did nothing. */
  skipped?: boolean;
}

const DAY_MS = 86_400_000;

function cutoffDay(now: Date, keepDays: number): string {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return new Date(today - keepDays * DAY_MS).toISOString().slice(0, 10);
}

function describe(p: InboxPartition): RetentionPartition {
  return { partition: p.name, day: p.day, bytes: p.bytes, estimated_rows: p.estimatedRows };
}

function workReason(needing: Record<string, number>): string {
  const parts = Object.entries(needing).map(([status, n]) => `${n} ${status}`);
  return `holds events that need work or attention (${parts.join(', ')}); replay or resolve them, and the next run drops it`;
}

async function dropOne(options: RetentionOptions, p: InboxPartition, report: RetentionReport): Promise<void> {
  const entry = describe(p);
  const needing = await eventsNeedingWork(options.db, p.name);
  if (Object.keys(needing).length > 0) {
    report.kept.push({ ...entry, reason: workReason(needing), needing_work: needing });
    return;
  }
  if (options.dryRun) {
    report.dropped.push(entry);
    return;
  }
  let archive: string | undefined;
  if (options.archiveDir) {
    try {
      const written = await archivePartition(options.db, p.name, options.archiveDir, (done, total) =>
        options.onProgress?.(`archiving ${p.name}: page ${done} of ${total}`),
      );
      archive = written.file;
    } catch (err) {
      options.logger.error({ err, partition: p.name }, 'archiving a partition failed; it is kept');
      report.kept.push({ ...entry, reason: `archive failed: ${describeError(err)}; the partition is kept until an archive succeeds` });
      return;
    }
  }
  try {
    const still = await options.db.transaction((tx) => dropInboxPartition(tx, p.name, options.lockTimeoutMs ?? 2000));
    if (still) {
      report.kept.push({ ...entry, reason: workReason(still), needing_work: still });
      return;
    }
  } catch (err) {
    report.kept.push({ ...entry, reason: `could not drop it now (${describeError(err)}); the next run tries again` });
    return;
  }
  report.dropped.push(archive ? { ...entry, archive } : entry);
  options.onProgress?.(`dropped ${p.name} (${p.day}, ${p.bytes} bytes)`);
}

async function runUnlocked(options: RetentionOptions, report: RetentionReport): Promise<void> {
  if (!options.dryRun) report.partitions_created = await ensureInboxPartitions(options.db);
  const partitions = await listInboxPartitions(options.db);
  const past = partitions.filter((p) => p.day < report.cutoff_day);
  for (const [i, p] of past.entries()) {
    options.onProgress?.(`partition ${i + 1} of ${past.length}: ${p.name}`);
    await dropOne(options, p, report);
  }
}

export async function runRetention(options: RetentionOptions): Promise<RetentionReport> {
  const report: RetentionReport = {
    dry_run: options.dryRun === true,
    keep_days: options.keepDays,
    cutoff_day: cutoffDay(options.now ?? new Date(), options.keepDays),
    partitions_created: 0,
    dropped: [],
    kept: [],
  };
  if (options.dryRun) {
    await runUnlocked(options, report);
    return report;
  }
  // One run at a time across replicas; a second one finds the lock held and leaves the work to the first.
  const locked = await options.db.withAdvisoryLock('retention', () => runUnlocked(options, report), { wait: false });
  if (!locked.acquired) report.skipped = true;
  else
    options.logger.info(
      { dropped: report.dropped.length, kept: report.kept.length, created: report.partitions_created, cutoff: report.cutoff_day },
      'retention run finished',
    );
  return report;
}
