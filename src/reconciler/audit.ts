import type { ApiClient } from '../client/client.js';
import type { Db } from '../db/types.js';
import { storedCompleteThrough } from './completeness.js';
import { RECONCILE_DEFAULTS } from './defaults.js';
import { eventIdsInInbox } from './state-queries.js';

export interface AuditResult {
  since: string;
  endpoints: string[];
  delivered_scanned: number;
  in_window: number;
  missing_count: number;
  /** Events the service believes delivered that postroom does not have (first 100). */
  missing: Array<{ event_id: string; event_type: string; endpoint_id: string; delivery_id: string; delivered_at: string | null }>;
  /** Each endpoint's completeness watermark as the reconciler last proved it (null: none yet). */
  complete_through: Record<string, string | null>;
  duration_ms: number;
}

/**
 * The proof: every delivery the service marks delivered within the window must be
 * in the inbox. A 2xx that was not backed by a commit would show up here. Must be zero.
 */
export async function auditDelivered(
  db: Db,
  api: ApiClient,
  options: { since: Date; endpoints: string[]; pageSize?: number; onProgress?: (scanned: number) => void },
): Promise<AuditResult> {
  const started = Date.now();
  const result: AuditResult = {
    since: options.since.toISOString(),
    endpoints: options.endpoints,
    delivered_scanned: 0,
    in_window: 0,
    missing_count: 0,
    missing: [],
    complete_through: {},
    duration_ms: 0,
  };
  for (const endpointId of options.endpoints) {
    let cursor: string | undefined;
    do {
      const page = await api.webhookDeliveries.list({
        status: 'delivered',
        endpoint_id: endpointId,
        limit: options.pageSize ?? RECONCILE_DEFAULTS.pageSize,
        ...(cursor ? { cursor } : {}),
      });
      result.delivered_scanned += page.items.length;
      const in_window = page.items.filter((d) => {
        const t = Date.parse(d.delivered_at ?? d.created_at);
        return Number.isNaN(t) || t >= options.since.getTime();
      });
      result.in_window += in_window.length;
      const present = await eventIdsInInbox(
        db,
        in_window.map((d) => d.event_id),
      );
      for (const d of in_window) {
        if (present.has(d.event_id)) continue;
        result.missing_count++;
        if (result.missing.length < 100)
          result.missing.push({
            event_id: d.event_id,
            event_type: d.event_type,
            endpoint_id: d.endpoint_id,
            delivery_id: d.delivery_id,
            delivered_at: d.delivered_at ?? null,
          });
      }
      options.onProgress?.(result.delivered_scanned);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  result.complete_through = await storedCompleteThrough(db, api.plane, options.endpoints);
  result.duration_ms = Date.now() - started;
  return result;
}
