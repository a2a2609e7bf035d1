import type { ApiClient } from '../client/client.js';
import type { Db } from '../db/types.js';
import { PostroomError, describeError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { seriesOf, type PostroomMetrics } from '../metrics/metrics.js';
import { PROBE_DEFAULTS, type ProbeOutcome } from './defaults.js';
import { diagnoseProbe } from './diagnose.js';
import { finishProbe, pruneProbes, recordProbeEvent, startProbe, storedProbeEvent } from './probe-queries.js';

/** The part of the API client a probe uses; the real client satisfies it. */
export type ProbeApi = Pick<ApiClient, 'plane' | 'webhookDeliveries'> & {
  webhookEndpoints: Pick<ApiClient['webhookEndpoints'], 'iterate' | 'test'>;
};

export interface ProbeDeps {
  db: Db;
  api: ProbeApi;
  logger: Logger;
  /** Milliseconds since the epoch. */
  clock: { now(): number };
  metrics?: PostroomMetrics | undefined;
  sleep?: (ms: number) => Promise<void>;
}

export interface ProbeOptions {
  /** Only these endpoints (default: every active endpoint the service lists for the key). */
  endpoints?: readonly string[];
  timeoutMs?: number;
  minIntervalMs?: number;
  /** The live plane is probed only when this is true (`--live`, POSTROOM_PROBE_LIVE). */
  allowLive?: boolean;
  pollMs?: number;
}

/** One endpoint's probe: `ok` with its round trip, the step that failed, or `skipped` (another is in flight, or too soon). */
export interface ProbeResult {
  endpoint_id: string;
  outcome: ProbeOutcome | 'skipped';
  /** From the request to the service until postroom had verified and stored the event. */
  round_trip_ms: number | null;
  event_id: string | null;
  detail: string | null;
}

export interface ProbeReport {
  plane: string;
  /** Every endpoint probed answered; false when one failed (a skipped one is neither). */
  ok: boolean;
  endpoints: ProbeResult[];
}

/**
 * Sends webhook.test through each endpoint and waits until postroom has verified and stored it: the whole
 * path from the service's dispatcher to the inbox, as the service sees it. Never floods the service: one probe in
 * flight per endpoint across every replica and CLI run, none sooner than `minIntervalMs` after the last, and none
 * on the live plane unless `allowLive`.
 */
export async function runProbe(deps: ProbeDeps, options: ProbeOptions = {}): Promise<ProbeReport> {
  const plane = deps.api.plane;
  if (plane === 'live' && !options.allowLive)
    throw new PostroomError(
      'probe_live_not_enabled',
      'the API key is on the live plane: a probe sends a real webhook.test to each endpoint. Pass --live (or set POSTROOM_PROBE_LIVE=true for the schedule) to probe it.',
    );
  const endpoints = options.endpoints?.length ? [...options.endpoints] : await activeEndpoints(deps.api);
  const results = await Promise.all(endpoints.map((endpointId) => probeEndpoint(deps, plane, endpointId, options)));
  const metrics = deps.metrics && seriesOf(deps.metrics);
  for (const r of results) {
    metrics?.probeRuns.inc({ outcome: r.outcome });
    if (r.outcome === 'ok' && r.round_trip_ms !== null) metrics?.probeRoundTrip.observe(r.round_trip_ms / 1000);
  }
  return { plane, ok: results.every((r) => r.outcome === 'ok' || r.outcome === 'skipped'), endpoints: results };
}

async function activeEndpoints(api: ProbeApi): Promise<string[]> {
  const ids: string[] = [];
  for await (const e of api.webhookEndpoints.iterate({ limit: 100 })) if (e.active !== false) ids.push(e.endpoint_id);
  return ids;
}

async function probeEndpoint(deps: ProbeDeps, plane: string, endpointId: string, options: ProbeOptions): Promise<ProbeResult> {
  const { db, api, clock } = deps;
  const timeoutMs = options.timeoutMs ?? PROBE_DEFAULTS.timeoutMs;
  const started = await startProbe(db, {
    plane,
    endpointId,
    minIntervalMs: options.minIntervalMs ?? PROBE_DEFAULTS.minIntervalMs,
    staleMs: Math.max(2 * timeoutMs, 60_000),
  });
  if ('skipped' in started)
    return {
      endpoint_id: endpointId,
      outcome: 'skipped',
      round_trip_ms: null,
      event_id: null,
      detail:
        started.skipped === 'in_flight'
          ? 'another probe of this endpoint is in flight (another replica or CLI run)'
          : `this endpoint was probed less than ${Math.round((options.minIntervalMs ?? PROBE_DEFAULTS.minIntervalMs) / 1000)} s ago`,
    };
  const { probeId } = started;
  const since = new Date(clock.now() - 5_000);
  const finish = async (r: Omit<ProbeResult, 'endpoint_id'>): Promise<ProbeResult> => {
    await finishProbe(db, {
      probeId,
      outcome: r.outcome as ProbeOutcome,
      roundTripMs: r.round_trip_ms,
      detail: r.detail,
      eventId: r.event_id,
    });
    await pruneProbes(db, { plane, endpointId, keepMs: 30 * 86_400_000 });
    if (r.outcome !== 'ok') deps.logger.warn({ endpoint_id: endpointId, outcome: r.outcome, detail: r.detail }, 'probe failed');
    return { endpoint_id: endpointId, ...r };
  };

  let eventId: string | null = null;
  try {
    const answer = await api.webhookEndpoints.test(endpointId);
    eventId = typeof answer?.event_id === 'string' && answer.event_id ? answer.event_id : null;
    if (eventId) await recordProbeEvent(db, probeId, eventId);
  } catch (err) {
    return finish({ outcome: 'api_refused', round_trip_ms: null, event_id: null, detail: describeError(err).slice(0, 500) });
  }
  const stored = await waitUntilStored(deps, { probeId, eventId, deadline: clock.now() + timeoutMs, pollMs: options.pollMs });
  if (stored) return finish({ outcome: 'ok', round_trip_ms: stored.round_trip_ms, event_id: stored.event_id, detail: null });
  const why = await diagnoseProbe(api, { endpointId, eventId, since }).catch((err: unknown) => ({
    outcome: 'never_delivered' as const,
    detail: `not stored within ${timeoutMs} ms, and the delivery log could not be read: ${describeError(err).slice(0, 300)}`,
  }));
  // The event may have landed while the log was read.
  const late = await storedProbeEvent(db, { probeId, eventId });
  if (late) return finish({ outcome: 'ok', round_trip_ms: late.round_trip_ms, event_id: late.event_id, detail: null });
  return finish({ outcome: why.outcome, round_trip_ms: null, event_id: eventId, detail: why.detail });
}

async function waitUntilStored(
  deps: ProbeDeps,
  p: { probeId: number; eventId: string | null; deadline: number; pollMs: number | undefined },
): Promise<{ event_id: string; round_trip_ms: number } | undefined> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (;;) {
    const stored = await storedProbeEvent(deps.db, { probeId: p.probeId, eventId: p.eventId });
    if (stored) return stored;
    if (deps.clock.now() >= p.deadline) return undefined;
    await sleep(Math.min(p.pollMs ?? PROBE_DEFAULTS.pollMs, Math.max(1, p.deadline - deps.clock.now())));
  }
}
