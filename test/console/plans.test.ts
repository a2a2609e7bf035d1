import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlText } from '../../src/db/statement.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { countReplayable } from '../../src/inbox/admin-queries.js';
import { correspondenceEvents, earlierUnfinished, pageInbox, type BrowseFilter } from '../../src/inbox/browse-queries.js';
import { inboxStatusCounts, minuteCounts } from '../../src/inbox/count-queries.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { explanationHistory } from '../../src/reconciler/explanation-queries.js';
import { gapOfEvent, gapsOfCorrespondence, pageGaps } from '../../src/reconciler/gap-queries.js';
import { getRun, listRuns, walkWatermarks } from '../../src/reconciler/state-queries.js';
import { listAudit } from '../../src/console/audit-queries.js';
import { latestProbes } from '../../src/probe/probe-queries.js';
import { listCompleteness, openGapPin } from '../../src/reconciler/completeness-queries.js';
import { isProbeEvent } from '../../src/worker/probe-events.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { explain, type PlanNode } from '../support/plans.js';

const pg = await adminUrl();

/** Tables that grow with history: a page of the console reads none of them whole. */
const GROWING = new Set([
  'inbox',
  'reconcile_gaps',
  'reconcile_runs',
  'reconcile_explanations',
  'console_audit',
  'inbox_minutes',
  'probe_runs',
]);

/**
 * Partial indexes over the rows that have not finished or need an operator: they grow with the backlog
 * and the dead letters, not with history (src/inbox/count-queries.ts), and may be walked whole.
 */
const BOUNDED_BY_PREDICATE = new Set(['inbox_unfinished_idx', 'inbox_attention_idx', 'inbox_ordering_idx']);

/**
 * What is wrong with a plan: a sequential scan of a growing table, or a walk of an inbox index over all
 * history with no condition that no Limit above it bounds (a page that could read every row).
 */
function unbounded(node: PlanNode, limited = false, out: string[] = []): string[] {
  const relation = node['Relation Name'];
  if (relation && GROWING.has(relation) && node['Node Type'] === 'Seq Scan') out.push(`Seq Scan on ${relation}`);
  const underLimit = limited || node['Node Type'] === 'Limit';
  const index = node['Index Name'];
  if (relation === 'inbox' && index && !BOUNDED_BY_PREDICATE.has(index) && !node['Index Cond'] && !underLimit)
    out.push(`${node['Node Type']} on ${node['Index Name']} without a condition or a limit`);
  for (const child of node.Plans ?? []) unbounded(child, underLimit, out);
  return out;
}

/** Runs fn recording every statement with its parameters, then EXPLAINs each as a large table would be planned. */
async function plansOf(db: Db, fn: (q: Queryable) => Promise<unknown>): Promise<Array<{ sql: string; plan: PlanNode }>> {
  const log: Array<{ sql: string; params: readonly unknown[] }> = [];
  const rec = {
    query: (sql: Parameters<Queryable['query']>[0], params?: readonly unknown[]) => {
      log.push({ sql: sqlText(sql), params: params ?? [] });
      return db.query(sql, params);
    },
    exec: (sql: string) => db.exec(sql),
  } as Queryable;
  await fn(rec);
  return db.transaction(async (tx) => {
    // The test's tables are small enough to read whole; ask for the plans of large ones.
    await tx.exec('SET LOCAL enable_seqscan = off');
    const out = [];
    for (const s of log) out.push({ sql: s.sql, plan: await explain(tx, s.sql, s.params) });
    return out;
  });
}

describe.skipIf(!pg)('every console page is served by indexes', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    const db = store.db;
    await db.query(
      `INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, correspondence_id, endpoint_id, source)
       SELECT 'evt_' || g, (ARRAY['participant.acted', 'correspondence.created', 'wallet.debited'])[1 + g % 3],
              now() - g * interval '1 second', now() - g * interval '1 second', convert_to('{}', 'UTF8'),
              (ARRAY['processed', 'processed', 'processed', 'dead', 'failed', 'received', 'quarantined', 'skipped'])[1 + g % 8],
              1, CASE WHEN g % 8 IN (0, 1, 2, 7) THEN now() END, CASE WHEN g % 3 <> 2 THEN 'cor_' || (g % 300) END, 'ep_' || (g % 4), 'webhook'
       FROM generate_series(1, 6000) g`,
    );
    await db.query(
      `INSERT INTO reconcile_gaps (event_id, event_type, endpoint_id, delivery_id, correspondence_id, status)
       SELECT 'evt_gap_' || g, 'participant.acted', 'ep_1', 'dlv_' || g, 'cor_' || (g % 300), (ARRAY['open', 'recovered', 'ignored'])[1 + g % 3]
       FROM generate_series(1, 900) g`,
    );
    await db.query(`INSERT INTO reconcile_runs (outcome, holder) SELECT 'clean', 'h' FROM generate_series(1, 300)`);
    await db.query(
      `INSERT INTO console_audit (actor, role, via, action, target) SELECT 'otto', 'operator', 'token', 'reveal', 'evt_' || g FROM generate_series(1, 300) g`,
    );
    await db.exec('ANALYZE');
  });
  afterAll(async () => store?.cleanup());

  const filters: Array<[string, BrowseFilter]> = [
    ['nothing', {}],
    ['dead', { status: 'dead' }],
    ['quarantined', { status: 'quarantined' }],
    ['failed', { status: 'failed' }],
    ['received', { status: 'received' }],
    ['processing', { status: 'processing' }],
    ['processed', { status: 'processed' }],
    ['skipped', { status: 'skipped' }],
    ['type', { type: 'wallet.debited' }],
    ['correspondence', { correspondenceId: 'cor_7' }],
    ['event id', { eventId: 'evt_77' }],
    ['endpoint', { endpointId: 'ep_2' }],
    ['time range', { from: new Date(Date.now() - 3_600_000), until: new Date(Date.now() - 60_000) }],
    ['dead, type and time', { status: 'dead', type: 'participant.acted', from: new Date(Date.now() - 86_400_000) }],
    ['correspondence and status', { correspondenceId: 'cor_7', status: 'processed' }],
  ];

  for (const [name, filter] of filters) {
    it(`inbox filtered by ${name}, first and later pages`, async () => {
      const plans = await plansOf(store.db, async (q) => {
        const first = await pageInbox(q, filter, null, 10);
        await pageInbox(q, filter, first.next ?? { receivedAt: new Date().toISOString().replace('Z', '000Z'), eventId: 'evt_5' }, 10);
      });
      for (const p of plans) expect(unbounded(p.plan), p.sql).toEqual([]);
    });
  }

  it('event, timeline, overview, gaps, runs, replay count and audit pages', async () => {
    const plans = await plansOf(store.db, async (q) => {
      await getInboxEvent(q, 'evt_12');
      await earlierUnfinished(q, { correspondenceId: 'cor_12', occurredAt: new Date(), eventId: 'evt_12' });
      await explanationHistory(q, 'cor_12', { syntheticEventId: 'evt_12', limit: 20 });
      await explanationHistory(q, 'cor_12', { limit: 500 });
      await gapOfEvent(q, 'evt_12');
      await correspondenceEvents(q, 'cor_12', 500);
      await gapsOfCorrespondence(q, 'cor_12', 100);
      await getProjectedCorrespondence(q, 'cor_12');
      await inboxStatusCounts(q);
      await minuteCounts(q, new Date(Date.now() - 86_400_000), 900);
      await walkWatermarks(q);
      for (const status of [undefined, 'open', 'ignored'] as const) {
        await pageGaps(q, { status, limit: 51 });
        await pageGaps(q, { status, before: 500, limit: 51 });
      }
      await listRuns(q, { limit: 51 });
      await listRuns(q, { before: 100, limit: 51 });
      await getRun(q, 3);
      await countReplayable(q, { status: 'dead', type: 'participant.acted', since: new Date(Date.now() - 86_400_000) });
      await countReplayable(q, { status: 'quarantined', correspondenceId: 'cor_3', endpointId: 'ep_1' });
      await listAudit(q, { limit: 51 });
      await listAudit(q, { before: 100, limit: 51 });
      await listCompleteness(q, 50);
      await latestProbes(q, 50);
      // Not console pages, but read on every reconcile run and for every webhook.test a handler would see.
      await openGapPin(q, 'ep_1', new Date(Date.now() - 86_400_000));
      await isProbeEvent(q, 'evt_12', new Date());
    });
    expect(plans.length).toBeGreaterThan(20);
    for (const p of plans) expect(unbounded(p.plan), p.sql).toEqual([]);
  });

  it('pages newest first without repeating or skipping an event, whatever the filter', async () => {
    for (const [name, filter] of filters) {
      const seen: string[] = [];
      let cursor = null;
      for (let i = 0; i < 2000; i++) {
        const page = await pageInbox(store.db, filter, cursor, 97);
        seen.push(...page.rows.map((r) => r.event_id));
        if (!page.next) break;
        cursor = page.next;
      }
      const expected = await store.db.query<{ event_id: string }>(
        `SELECT event_id FROM inbox i WHERE ${[
          filter.status === 'processing' ? 'false' : filter.status ? `status = '${filter.status}'` : 'true',
          filter.type ? `type = '${filter.type}'` : 'true',
          filter.correspondenceId ? `correspondence_id = '${filter.correspondenceId}'` : 'true',
          filter.eventId ? `event_id = '${filter.eventId}'` : 'true',
          filter.endpointId ? `endpoint_id = '${filter.endpointId}'` : 'true',
          filter.from ? `received_at >= '${filter.from.toISOString()}'` : 'true',
          filter.until ? `received_at < '${filter.until.toISOString()}'` : 'true',
        ].join(' AND ')} ORDER BY received_at DESC, event_id COLLATE "C" DESC`,
      );
      expect(seen, name).toEqual(expected.rows.map((r) => r.event_id));
    }
  });
});
