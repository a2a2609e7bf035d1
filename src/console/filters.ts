import type { ReplayFilter } from '../inbox/admin-queries.js';
import type { BrowseCursor, BrowseFilter } from '../inbox/browse-queries.js';
import { INBOX_STATUSES, type InboxStatus } from '../inbox/types.js';
import { field } from './http.js';
import type { InboxQuery } from './views/inbox.js';

/** A filter value the console cannot use, with what it accepts: shown above the (empty) listing. */
export class FilterError extends Error {}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A time as typed into a filter: an ISO date or date-time (UTC unless it names a zone), or a duration
 * back from now (`30m`, `24h`, `7d`).
 */
export function parseWhen(name: string, raw: string, now: number): Date {
  const ago = /^(\d{1,6})\s*([mhd])$/i.exec(raw);
  if (ago) return new Date(now - Number(ago[1]) * UNITS[ago[2]!.toLowerCase()]!);
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$/i.test(raw)) {
    const zoned = /(Z|[+-]\d{2}:?\d{2})$/i.test(raw) || raw.length === 10 ? raw : `${raw}Z`;
    const d = new Date(zoned.replace(' ', 'T'));
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw new FilterError(`${name}: expected a UTC time such as 2026-12-05T02:00, or a duration back from now such as 24h`);
}

export function readInboxQuery(params: URLSearchParams): InboxQuery {
  return {
    status: field(params, 'status'),
    type: field(params, 'type'),
    correspondence: field(params, 'correspondence'),
    event: field(params, 'event'),
    endpoint: field(params, 'endpoint'),
    from: field(params, 'from', 64),
    to: field(params, 'to', 64),
  };
}

export function toBrowseFilter(query: InboxQuery, now: number): BrowseFilter {
  if (query.status !== undefined && !(INBOX_STATUSES as readonly string[]).includes(query.status))
    throw new FilterError(`status: expected one of ${INBOX_STATUSES.join(', ')}`);
  return {
    status: query.status as InboxStatus | undefined,
    type: query.type,
    correspondenceId: query.correspondence,
    eventId: query.event,
    endpointId: query.endpoint,
    from: query.from === undefined ? undefined : parseWhen('Received from', query.from, now),
    until: query.to === undefined ? undefined : parseWhen('Received before', query.to, now),
  };
}

/** `before=<received_at to the microsecond>~<event id>`, as the inbox's "Older events" link writes it. */
export function parseCursor(raw: string | undefined): BrowseCursor | null {
  if (raw === undefined) return null;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)~(.{1,256})$/s.exec(raw);
  if (!m) throw new FilterError('before: not a page position this console wrote; start again from the newest events');
  return { receivedAt: m[1]!, eventId: m[2]! };
}

/** A positive whole number from the query string (a page position by id), or undefined. */
export function parseId(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d{1,15}$/.test(raw)) throw new FilterError('before: expected a whole number');
  return Number(raw);
}

/** The filtered set a replay takes: dead or quarantined only, with the inbox's other filters. */
export function replayFilter(query: InboxQuery, now: number): { filter: ReplayFilter; description: string } {
  if (query.status !== 'dead' && query.status !== 'quarantined')
    throw new FilterError('Replay takes dead or quarantined events: filter the inbox by one of those statuses first.');
  if (query.event !== undefined) throw new FilterError('To replay one event, open it and use its Replay button.');
  const browse = toBrowseFilter(query, now);
  const filter: ReplayFilter = {
    status: query.status,
    type: browse.type,
    since: browse.from,
    until: browse.until,
    correspondenceId: browse.correspondenceId,
    endpointId: browse.endpointId,
  };
  const parts = [`${query.status} events`];
  if (query.type) parts.push(`of type ${query.type}`);
  if (query.correspondence) parts.push(`of correspondence ${query.correspondence}`);
  if (query.endpoint) parts.push(`from endpoint ${query.endpoint}`);
  if (query.from) parts.push(`received from ${query.from}`);
  if (query.to) parts.push(`before ${query.to}`);
  return { filter, description: parts.join(' ') };
}

/** The filters as query-string values, the empty ones left out. */
export function inboxQueryOf(query: InboxQuery): Record<string, string | undefined> {
  return { ...query };
}
