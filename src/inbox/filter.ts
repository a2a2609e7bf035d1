import { inFlight } from './in-flight.js';
import type { InboxStatus } from './types.js';

/** What the CLI and replay select inbox rows by. */
export interface InboxFilter {
  status?: InboxStatus | undefined;
  type?: string | undefined;
  /** Received at or after. */
  since?: Date | undefined;
  /** Received before. */
  until?: Date | undefined;
  correspondenceId?: string | undefined;
  endpointId?: string | undefined;
}

/**
 * The WHERE conditions for a filter, appending their values to `params` (so the
 * caller can add its own after). Empty when the filter selects everything.
 */
export function inboxFilterSql(f: InboxFilter, params: unknown[]): string {
  const where: string[] = [];
  if (f.status === 'processing') {
    // A row of an earlier version's claim, or an event in a batch in flight (migration 008).
    where.push(`(status = 'processing' OR (status IN ('received', 'failed') AND ${inFlight()}))`);
  } else if (f.status) {
    params.push(f.status);
    where.push(`status = $${params.length}`);
    if (f.status === 'received' || f.status === 'failed') where.push(`NOT ${inFlight()}`);
  }
  if (f.type) {
    params.push(f.type);
    where.push(`type = $${params.length}`);
  }
  if (f.since) {
    params.push(f.since);
    where.push(`received_at >= $${params.length}`);
  }
  if (f.until) {
    params.push(f.until);
    where.push(`received_at < $${params.length}`);
  }
  if (f.correspondenceId !== undefined) {
    params.push(f.correspondenceId);
    where.push(`correspondence_id = $${params.length}`);
  }
  if (f.endpointId !== undefined) {
    params.push(f.endpointId);
    where.push(`endpoint_id = $${params.length}`);
  }
  return where.join(' AND ');
}
