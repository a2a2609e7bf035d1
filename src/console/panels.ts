import type { Queryable } from '../db/types.js';
import { latestProbes } from '../probe/probe-queries.js';
import { listCompleteness } from '../reconciler/completeness-queries.js';
import { walkWatermarks } from '../reconciler/state-queries.js';

/**
 * A panel of the overview that is a table: figures per endpoint, per probe, per anything. The overview
 * shows every panel whose source returns one, after its fixed panels; a source returns undefined when
 * it has nothing to show (no such data stored yet), and the overview leaves it out.
 */
export interface TablePanel {
  title: string;
  columns: string[];
  rows: Array<Array<string | number | Date | null>>;
  note?: string;
}

export type PanelSource = (q: Queryable) => Promise<TablePanel | undefined>;

/** How far the reconciler's walk of each endpoint's delivery list has got: where the next run starts. */
export const walkPanel: PanelSource = async (q) => {
  const rows = await walkWatermarks(q);
  if (rows.length === 0) return undefined;
  return {
    title: 'Reconciler walk per endpoint',
    columns: ['endpoint', 'deliveries', 'walked up to', 'state', 'updated'],
    rows: rows.map((r) => [
      r.endpoint_id,
      r.delivery_status,
      r.watermark,
      r.resuming ? 'resuming a walk cut short' : 'complete',
      r.updated_at,
    ]),
    note: 'Deliveries created before "walked up to" (less the overlap) have been examined by a complete walk.',
  };
};

/** Each endpoint's completeness watermark, most lagging first, with the run that proved it. */
export const completenessPanel: PanelSource = async (q) => {
  const rows = await listCompleteness(q, 50);
  if (rows.length === 0) return undefined;
  return {
    title: 'Complete through, per endpoint',
    columns: ['endpoint', 'plane', 'complete through', 'proved by run', 'proved'],
    rows: rows.map((r) => [r.endpoint_id, r.plane, r.complete_through, r.run_id, r.proved_at]),
    note: 'Every delivery the service created for the endpoint before "complete through" is in the inbox or a gap closed with evidence.',
  };
};

/** The last end-to-end probe of each endpoint: its outcome, round trip, and when one last succeeded. */
export const probePanel: PanelSource = async (q) => {
  const rows = await latestProbes(q, 50);
  if (rows.length === 0) return undefined;
  return {
    title: 'Probe per endpoint',
    columns: ['endpoint', 'plane', 'last probe', 'finished', 'round trip (ms)', 'last success', 'detail'],
    rows: rows.map((r) => [r.endpoint_id, r.plane, r.outcome, r.finished_at, r.round_trip_ms, r.last_ok_at, r.detail]),
    note: 'webhook.test sent through the endpoint until postroom stored it (`postroom probe`); a failure names the step that failed.',
  };
};

/** The overview's table panels, in order: each a query function returning its rows, shown when it returns some. */
export const OVERVIEW_PANELS: readonly PanelSource[] = [completenessPanel, probePanel, walkPanel];
