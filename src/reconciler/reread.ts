import type { Clock } from '../clock.js';
import { isApiError } from '../client/errors.js';
import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import { insertInboxBatch } from '../inbox/insert-queries.js';
import type { Logger } from '../logging/logger.js';
import { getProjectedCorrespondence } from '../projection/read.js';
import { RECONCILE_DEFAULTS } from './defaults.js';
import { insertExplanations } from './explanation-queries.js';
import { mapWithConcurrency } from './pool.js';
import { rereadCandidates } from './projection-reads.js';
import { saveServiceState } from './service-state-queries.js';
import { getListingWatermark, saveListingWatermark } from './state-queries.js';
import { planCorrespondence, toInboxRow, type Explanation, type ServiceFile } from './synthetic.js';
import type { ReconcileOptions, ReconcilerApi } from './types.js';
import { context, inSpan, recordFailure, traceparentOf } from '../tracing/trace.js';

export interface RereadResult {
  source: 'listing' | 'known';
  /** Files re-read and brought up to date in this run. */
  ok: Set<string>;
  failures: Array<{ correspondence_id: string; error: string }>;
  planned: number;
  written: number;
  /** What the files re-read in this run show now (not stored; see CorrespondencePlan.standing). */
  standing: Explanation[];
}

interface RereadDeps {
  db: Db;
  api: ReconcilerApi;
  clock: Clock;
  logger: Logger;
}

interface RereadOptions extends ReconcileOptions {
  dryRun: boolean;
  runId: number | null;
  matchWindowMs: number;
  /** Delivery time of the earliest open gap: the listing must reach back to it. */
  earliestGap: Date | null;
  /** Files open gaps name (deliveries that carry a correspondence id). */
  namedIds: readonly string[];
  onFile: () => void;
}

/** A listing the service does not have answers like this; anything else is a failure to report. */
const noListing = (err: unknown): boolean => isApiError(err) && (err.status === 404 || err.status === 405 || err.status === 501);

/**
 * Re-reads what can explain open gaps and keeps the projection equal to the
 * service. With the service's listing of changed files it walks every file
 * changed since the earlier of the listing watermark (less an overlap) and the
 * earliest open gap, so files postroom never saw (created with curl, a plan run,
 * a portal campaign) are found too. Without a listing it re-reads what it knows:
 * the projection, the sent ledger and the files gaps name. Each file's synthetic
 * events and explanations are written together.
 */
export async function rereadFiles(deps: RereadDeps, options: RereadOptions): Promise<RereadResult> {
  const { db, api, clock, logger } = deps;
  const result: RereadResult = { source: 'listing', ok: new Set(), failures: [], planned: 0, written: 0, standing: [] };
  const concurrency = options.rereadConcurrency ?? RECONCILE_DEFAULTS.rereadConcurrency;

  /**
   * One file's re-read, in a span of the reconcile run's trace. The synthetic events it writes carry that
   * span's traceparent, so the worker's processing of each, and its handlers, join the run's trace.
   */
  const apply = (file: ServiceFile): Promise<void> =>
    inSpan('postroom.reconcile.reread', {}, context.active(), async (span) => {
      const id = file.correspondence_id;
      try {
        const projected = await getProjectedCorrespondence(db, id);
        const plan = planCorrespondence(file, projected, new Date(clock.now()), options.matchWindowMs);
        result.planned += plan.events.length;
        if (span.isRecording()) span.setAttribute('postroom.synthetic.planned', plan.events.length);
        if (!options.dryRun && (plan.events.length || plan.explanations.length)) {
          const traceContext = traceparentOf(span);
          const written = await db.transaction(async (tx) => {
            const rows = plan.events.length
              ? await insertInboxBatch(
                  tx,
                  plan.events.map((e) => ({ ...toInboxRow(e), traceContext })),
                )
              : new Set<string>();
            await insertExplanations(tx, plan.explanations, options.runId);
            return rows.size;
          });
          // Not `result.written += await …`: that reads the total before the await and loses concurrent counts.
          result.written += written;
          if (span.isRecording()) span.setAttribute('postroom.synthetic.written', written);
        }
        // What the service answered, for the console's timeline beside the projection.
        if (!options.dryRun) await saveServiceState(db, file, new Date(clock.now()), options.runId);
        result.ok.add(id);
        result.standing.push(...plan.standing);
      } catch (err) {
        recordFailure(span, err);
        result.failures.push({ correspondence_id: id, error: describeError(err).slice(0, 300) });
      }
      options.onFile();
    });
  const fetchAndApply = async (id: string): Promise<void> => {
    let file: ServiceFile;
    try {
      file = await api.correspondence.get(id);
    } catch (err) {
      result.failures.push({ correspondence_id: id, error: describeError(err).slice(0, 300) });
      options.onFile();
      return;
    }
    await apply(file);
  };

  const seen = new Set<string>();
  const plane = api.plane ?? 'default';
  const listChanged = api.correspondence.listChanged;
  let listed = false;
  if (listChanged) {
    const now = clock.now();
    const watermark = await getListingWatermark(db, plane);
    const from = Math.min(
      (watermark?.getTime() ?? now - (options.overlapMs ?? RECONCILE_DEFAULTS.overlapMs)) -
        (options.listingOverlapMs ?? RECONCILE_DEFAULTS.listingOverlapMs),
      options.earliestGap ? options.earliestGap.getTime() - options.matchWindowMs : Infinity,
      options.since?.getTime() ?? Infinity,
    );
    let cursor: string | undefined;
    let maxSeen: number | null = null;
    try {
      for (;;) {
        if (options.signal?.aborted) return result;
        const page = await listChanged({
          updatedSince: new Date(from),
          limit: options.pageSize ?? RECONCILE_DEFAULTS.listingPageSize,
          ...(cursor ? { cursor } : {}),
        });
        listed = true;
        // A file listed again changed again during the walk: applying its newer state is right.
        const fresh = page.items;
        for (const f of fresh) {
          seen.add(f.correspondence_id);
          const t = Date.parse(f.updated_at);
          if (maxSeen === null || t > maxSeen) maxSeen = t;
        }
        await mapWithConcurrency(fresh, concurrency, apply);
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      if (!options.dryRun && maxSeen !== null && result.failures.length === 0) await saveListingWatermark(db, plane, new Date(maxSeen));
    } catch (err) {
      if (listed || !noListing(err)) throw err;
      logger.info({ plane }, 'the service has no correspondence listing; re-reading the files postroom knows');
    }
  }
  if (!listed) {
    result.source = 'known';
    const since = options.earliestGap ? new Date(options.earliestGap.getTime() - options.matchWindowMs) : null;
    for (const id of await rereadCandidates(db, since)) seen.add(id);
    await mapWithConcurrency([...seen], concurrency, fetchAndApply);
  }
  // Files a delivery named that the walk did not reach.
  const named = options.namedIds.filter((id) => !seen.has(id));
  await mapWithConcurrency(named, concurrency, fetchAndApply);
  return result;
}
