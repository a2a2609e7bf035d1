import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { correspondenceEvents, earlierUnfinished } from '../inbox/browse-queries.js';
import { inboxStatusCounts, minuteCounts } from '../inbox/count-queries.js';
import { getInboxEvent } from '../inbox/read-queries.js';
import { compareWithService } from '../projection/compare.js';
import { getProjectedCorrespondence } from '../projection/read.js';
import { explanationHistory } from '../reconciler/explanation-queries.js';
import { gapOfEvent, gapsOfCorrespondence, pageGaps } from '../reconciler/gap-queries.js';
import { getServiceState } from '../reconciler/service-state-queries.js';
import { listRuns } from '../reconciler/state-queries.js';
import { maskValue } from './mask.js';
import type { PanelSource } from './panels.js';
import { ago } from './text.js';
import type { ChartWindow } from './views/chart.js';
import type { TimelineData } from './views/correspondence.js';
import type { EventData, OrderingHold } from './views/event.js';
import type { OverviewData } from './views/overview.js';

/** What each view shows, read through the shared query modules (src/inbox, src/reconciler, src/projection). */

const OPEN_GAPS_SHOWN = 10;

async function chart(db: Db, title: string, now: number, bucketSeconds: number, buckets: number): Promise<ChartWindow> {
  const step = bucketSeconds * 1000;
  const from = new Date(Math.floor(now / step) * step - (buckets - 1) * step);
  return { title, from, bucketSeconds, buckets, counts: await minuteCounts(db, from, bucketSeconds) };
}

export async function loadOverview(
  db: Db,
  clock: Clock,
  panels: readonly PanelSource[],
  reconcileUnavailable: string | undefined,
): Promise<OverviewData> {
  const now = clock.now();
  const [counts, runs, gaps, hour, day] = await Promise.all([
    inboxStatusCounts(db),
    listRuns(db, { limit: 1 }),
    pageGaps(db, { status: 'open', limit: OPEN_GAPS_SHOWN + 1 }),
    chart(db, 'Last hour, per minute', now, 60, 60),
    chart(db, 'Last day, per 15 minutes', now, 900, 96),
  ]);
  const shown = [];
  for (const source of panels) {
    const panel = await source(db);
    if (panel) shown.push(panel);
  }
  return {
    counts,
    lastRun: runs[0],
    openGaps: gaps.slice(0, OPEN_GAPS_SHOWN),
    openGapsMore: gaps.length > OPEN_GAPS_SHOWN,
    charts: [hour, day],
    panels: shown,
    reconcileUnavailable,
  };
}

/** Whether the claim waits for an earlier event now, as src/worker/claim-queries.ts decides it. */
function holdOf(earlier: OrderingHold['earlier'], event: { received_at: Date }, holdSeconds: number, now: number): OrderingHold {
  if (holdSeconds <= 0) return { earlier, holds: false, why: 'ordering is off (POSTROOM_ORDERING_HOLD_SECONDS=0)' };
  if (earlier.status === 'received' || earlier.status === 'processing')
    return { earlier, holds: true, why: 'an earlier event of the correspondence runs first' };
  const waited = (now - new Date(event.received_at).getTime()) / 1000;
  return waited < holdSeconds
    ? {
        earlier,
        holds: true,
        why: `it is failing; this event waits for it until it has waited ${ago(holdSeconds)} (${ago(waited)} so far)`,
      }
    : {
        earlier,
        holds: false,
        why: `it is failing, and this event has waited longer than the ordering hold (${ago(holdSeconds)}), so it goes on`,
      };
}

export async function loadEvent(
  db: Db,
  eventId: string,
  options: { revealed: boolean; holdSeconds: number; now: number },
): Promise<EventData | undefined> {
  const event = await getInboxEvent(db, eventId);
  if (!event) return undefined;
  let hold: OrderingHold | undefined;
  if (['received', 'processing', 'failed'].includes(event.status) && event.correspondence_id && event.occurred_at) {
    const earlier = await earlierUnfinished(db, {
      correspondenceId: event.correspondence_id,
      occurredAt: event.occurred_at,
      eventId: event.event_id,
    });
    if (earlier) hold = holdOf(earlier, event, options.holdSeconds, options.now);
  }
  const [evidence, gap] = await Promise.all([
    event.correspondence_id ? explanationHistory(db, event.correspondence_id, { syntheticEventId: eventId, limit: 20 }) : [],
    gapOfEvent(db, eventId),
  ]);
  return {
    event,
    envelope: event.payload === null ? null : options.revealed ? event.payload : maskValue(event.payload),
    revealed: options.revealed,
    hold,
    evidence,
    gap,
    traceId: event.trace_id || undefined,
  };
}

const TIMELINE_EVENTS = 500;

export async function loadTimeline(db: Db, correspondenceId: string): Promise<TimelineData> {
  const [events, explanations, gaps, projection, service] = await Promise.all([
    correspondenceEvents(db, correspondenceId, TIMELINE_EVENTS),
    explanationHistory(db, correspondenceId, { limit: 500 }),
    gapsOfCorrespondence(db, correspondenceId, 100),
    getProjectedCorrespondence(db, correspondenceId),
    getServiceState(db, correspondenceId),
  ]);
  const differences = service ? compareWithService(projection, service.file) : [];
  return { correspondenceId, ...events, explanations, gaps, projection, service, differences };
}
