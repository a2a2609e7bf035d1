import type { WebhookDelivery } from '../client/types.js';
import { isApiError } from '../client/errors.js';
import type { Db } from '../db/types.js';
import type { Logger } from '../logging/logger.js';
import { eventTypeTraits, eventTypesWhere } from '../events/type-table.js';
import { RECONCILE_DEFAULTS } from './defaults.js';
import { upsertGaps, type NewGap } from './gap-queries.js';
import { completeWalk, eventIdsInInbox, getWatermark, saveResumePoint } from './state-queries.js';
import type { ReconcileOptions, ReconcileProgress, ReconcilerApi } from './types.js';

/**
 * Event types about a correspondence, whose gaps a re-read of files can account
 * for. Others (wallet, campaign) have nothing to re-read: their gaps stay open for on-call.
 */
export const CORRESPONDENCE_SCOPED_TYPES: readonly string[] = eventTypesWhere((t) => t.about === 'correspondence');

function isCorrespondenceScoped(type: string): boolean {
  return eventTypeTraits(type)?.about === 'correspondence';
}

/** A dead delivery of a type sent only on request (the test operation's) is nothing missed. */
function isOnRequest(type: string): boolean {
  return eventTypeTraits(type)?.delivery === 'on_request';
}

/** Some deliveries may name their correspondence (a field the spec does not show); use it when present. */
export function deliveryCorrespondenceId(d: WebhookDelivery): string | null {
  const direct = d.correspondence_id;
  if (typeof direct === 'string' && direct) return direct;
  const data = d.data as { correspondence_id?: unknown } | undefined;
  return typeof data?.correspondence_id === 'string' && data.correspondence_id ? data.correspondence_id : null;
}

export interface WalkTotals {
  pages: number;
  scanned: number;
  skipped: number;
  gaps_found: number;
  earliestGapDelivery: Date | null;
}

/**
 * Pass 1 for one endpoint: every dead delivery whose event is not in the inbox
 * becomes a gap. The list has no time filter and no promised order, so the whole
 * list is walked; records older than both the watermark minus the overlap and the
 * completeness watermark were examined by an earlier complete walk and are only counted. Progress is saved
 * after each page so a killed run resumes where it stopped.
 */
export async function walkDeadDeliveries(
  db: Db,
  api: ReconcilerApi,
  endpointId: string,
  options: ReconcileOptions & {
    logger: Logger;
    progress: ReconcileProgress;
    plane?: string;
    /**
     * The endpoint's completeness watermark: a record created at or after it is examined whatever the overlap,
     * so a delivery pending for longer than the overlap that dies later still becomes a gap and pins it
     * (it was pending at the last proof, so it lies after the watermark).
     */
    examineFrom?: Date | null;
  },
): Promise<WalkTotals> {
  const status = 'dead';
  const dryRun = options.dryRun ?? false;
  const overlapMs = options.overlapMs ?? RECONCILE_DEFAULTS.overlapMs;
  const mark = await getWatermark(db, endpointId, status);
  const skipBefore = Math.min(
    mark.watermark ? mark.watermark.getTime() - overlapMs : -Infinity,
    options.examineFrom?.getTime() ?? Infinity,
  );
  const since = options.since?.getTime() ?? -Infinity;
  let cursor: string | undefined = mark.resumeCursor ?? undefined;
  let maxSeen: Date | null = mark.resumeMaxSeen;
  const totals: WalkTotals = { pages: 0, scanned: 0, skipped: 0, gaps_found: 0, earliestGapDelivery: null };

  for (;;) {
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
    let page;
    try {
      page = await api.webhookDeliveries.list({
        status,
        endpoint_id: endpointId,
        limit: options.pageSize ?? RECONCILE_DEFAULTS.pageSize,
        ...(cursor ? { cursor } : {}),
      });
    } catch (err) {
      // A stored cursor the service refuses (it expired, or the listing changed): start the walk again from the top.
      if (cursor && cursor === mark.resumeCursor && isApiError(err) && (err.status === 400 || err.status === 404 || err.status === 422)) {
        options.logger.warn({ endpoint_id: endpointId }, 'stored resume cursor refused; walking the dead deliveries from the start');
        cursor = undefined;
        mark.resumeCursor = null;
        continue;
      }
      throw err;
    }
    totals.pages++;
    totals.scanned += page.items.length;
    const fresh: WebhookDelivery[] = [];
    for (const d of page.items) {
      const created = Date.parse(d.created_at);
      if (!Number.isNaN(created) && (maxSeen === null || created > maxSeen.getTime())) maxSeen = new Date(created);
      if ((!Number.isNaN(created) && created < skipBefore) || created < since) totals.skipped++;
      else if (!isOnRequest(d.event_type)) fresh.push(d);
    }
    const present = await eventIdsInInbox(
      db,
      fresh.map((d) => d.event_id),
    );
    const gaps: NewGap[] = fresh
      .filter((d) => !present.has(d.event_id))
      .map((d) => ({
        eventId: d.event_id,
        eventType: d.event_type,
        endpointId: d.endpoint_id || endpointId,
        deliveryId: d.delivery_id,
        deliveryCreatedAt: Number.isNaN(Date.parse(d.created_at)) ? null : d.created_at,
        lastError: (d.last_error ?? '').slice(0, 2000),
        correspondenceId: deliveryCorrespondenceId(d),
        plane: options.plane ?? null,
        reason: isCorrespondenceScoped(d.event_type)
          ? null
          : `no resource to re-read for ${d.event_type} through the API: confirm with the service or ignore`,
      }));
    for (const g of gaps) {
      const t = g.deliveryCreatedAt ? new Date(g.deliveryCreatedAt) : null;
      if (t && (!totals.earliestGapDelivery || t < totals.earliestGapDelivery)) totals.earliestGapDelivery = t;
    }
    if (dryRun) totals.gaps_found += gaps.length;
    else {
      totals.gaps_found += await upsertGaps(db, gaps);
      await saveResumePoint(db, endpointId, status, page.nextCursor, maxSeen);
    }
    options.progress.pages++;
    options.progress.deliveries_scanned += page.items.length;
    options.progress.gaps_found += dryRun ? gaps.length : 0;
    options.onProgress?.(options.progress);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  if (!dryRun) await completeWalk(db, endpointId, status, maxSeen);
  return totals;
}

/**
 * Pending deliveries older than the threshold: not yet missed, but at risk. Also the earliest pending delivery
 * that holds the completeness watermark back (`pin`): one older than the threshold, or one whose event is not in
 * the inbox yet (a delivery not received is not complete, however young). A pending delivery of a type sent only
 * on request is nothing the organisation misses. A record without a readable time pins at the epoch.
 */
export async function findAtRisk(
  api: ReconcilerApi,
  endpointId: string,
  olderThan: Date,
  pageSize: number,
  db?: Db,
): Promise<{
  count: number;
  sample: Array<{ delivery_id: string; event_id: string; endpoint_id: string; created_at: string }>;
  pin: Date | null;
}> {
  let cursor: string | undefined;
  let count = 0;
  let pin: number | null = null;
  const sample: Array<{ delivery_id: string; event_id: string; endpoint_id: string; created_at: string }> = [];
  do {
    const page = await api.webhookDeliveries.list({
      status: 'pending',
      endpoint_id: endpointId,
      limit: pageSize,
      ...(cursor ? { cursor } : {}),
    });
    const received = db
      ? await eventIdsInInbox(
          db,
          page.items.map((d) => d.event_id),
        )
      : new Set<string>();
    for (const d of page.items) {
      const created = Date.parse(d.created_at);
      const at = Number.isNaN(created) ? 0 : created;
      if (!isOnRequest(d.event_type) && (at < olderThan.getTime() || !received.has(d.event_id))) pin = Math.min(pin ?? at, at);
      if (Date.parse(d.created_at) < olderThan.getTime()) {
        count++;
        if (sample.length < 20)
          sample.push({ delivery_id: d.delivery_id, event_id: d.event_id, endpoint_id: d.endpoint_id, created_at: d.created_at });
      }
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return { count, sample, pin: pin === null ? null : new Date(pin) };
}
