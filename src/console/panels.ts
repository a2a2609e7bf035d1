import type { Queryable } from '../db/types.js';
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

/**
 * The overview's table panels, in order. A completeness watermark or probe status per endpoint is one
 * more source here: a query function returning its rows, shown when it returns some.
 */
export const OVERVIEW_PANELS: readonly PanelSource[] = [walkPanel];
