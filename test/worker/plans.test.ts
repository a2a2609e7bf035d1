import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import type { Db, Queryable } from '../../src/db/types.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import type { NewInboxEvent } from '../../src/inbox/types.js';
import { claimBatch, reapOrphanedAttempts } from '../../src/worker/claim-queries.js';
import { completeEvents, takeBatch } from '../../src/worker/complete-queries.js';
import { availableStoreKinds, disableInboxAutovacuum, openTestStore, type TestStore } from '../support/db.js';
import { asOneTablePlan, explain, recordingInto, unkeyedInboxReads, type PlanNode, type SentStatement } from '../support/plans.js';

/**
 * The worker's statements must keep their shape when the planner's statistics
 * are stale. Autovacuum last looked at the inbox in a quiet moment, so it
 * believes the partial indexes over the backlog are empty; then a burst
 * arrives. A statement that then walks a whole partial index for every event
 * it handles costs O(backlog) per event: the drain slows exactly when the
 * backlog is largest. Measured before this test existed: with the statistics
 * of an empty inbox, the ordering check of the claim walked
 * inbox_unfinished_idx (every unfinished event) once per candidate, and
 * completing a batch walked inbox_lease_idx once per event.
 */

const CORRESPONDENCES = 40;
const HISTORY = 2000;
const BACKLOG = 1200;

function row(i: number): NewInboxEvent {
  const id = `evt_plan_${String(i).padStart(5, '0')}`;
  const at = new Date(Date.UTC(2026, 10, 18, 10, 0, 0) + i * 1000).toISOString();
  const json = JSON.stringify({ event_id: id, type: 'participant.read', at, data: { correspondence_id: `cor_${i % CORRESPONDENCES}` } });
  return {
    eventId: id,
    type: 'participant.read',
    occurredAt: at,
    payloadJson: null,
    rawBody: Buffer.from(json),
    signatureHeader: null,
    headers: null,
    endpointId: null,
    source: 'webhook',
    correspondenceId: `cor_${i % CORRESPONDENCES}`,
    secretIndex: null,
    status: 'received',
    lastError: null,
  };
}

/** Runs fn on a connection that records every statement and its parameters, in one transaction. */
async function recorded(db: Db, fn: (tx: Queryable) => Promise<unknown>): Promise<SentStatement[]> {
  const log: SentStatement[] = [];
  await db.transaction((tx) => fn(recordingInto(tx, log)));
  return log;
}

/** EXPLAINs every query of a recorded transaction, in order, after replaying its settings. */
async function plansOf(db: Db, log: SentStatement[]): Promise<PlanNode[]> {
  return db.transaction(async (tx) => {
    for (const s of log) if (s.params === undefined) await tx.exec(s.sql);
    // The test's inbox is small enough to read whole; ask for the plan of a large one.
    await tx.exec('SET LOCAL enable_seqscan = off');
    const plans: PlanNode[] = [];
    for (const s of log) if (s.params !== undefined) plans.push(await explain(tx, s.sql, s.params));
    return plans;
  });
}

/** Takes a claimed batch and completes the given events as processed, recorded as in recorded(). */
async function recordedCompletion(db: Db, batchId: string, ids: readonly string[]): Promise<SentStatement[]> {
  return recorded(db, async (tx) => {
    expect(await takeBatch(tx, batchId)).toBe(true);
    await completeEvents(
      tx,
      ids.map((eventId) => ({ eventId, status: 'processed' as const, error: null, retryInMs: null, attemptsDelta: 0 as const })),
      false,
    );
  });
}

/** The driver's own text encoding of parameters (no types ship for this module). */
const pgUtils = createRequire(import.meta.url)('pg/lib/utils.js') as {
  prepareValue(value: unknown): string | Buffer | null;
  escapeLiteral(text: string): string;
};

/** A parameter as the SQL literal the driver's text encoding would give it. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const prepared = pgUtils.prepareValue(value) as string | Buffer | null;
  if (prepared === null) return 'NULL';
  return pgUtils.escapeLiteral(Buffer.isBuffer(prepared) ? `\\x${prepared.toString('hex')}` : String(prepared));
}

/**
 * The same statements' generic plans: what a connection that keeps its
 * prepared statements (named() statements on Postgres) may settle on after five
 * runs, and then use for every batch whatever its parameters.
 */
async function genericPlansOf(db: Db, log: SentStatement[], options: { asIfLarge: boolean } = { asIfLarge: true }): Promise<PlanNode[]> {
  return db.transaction(async (tx) => {
    for (const s of log) if (s.params === undefined) await tx.exec(s.sql);
    if (options.asIfLarge) await tx.exec('SET LOCAL enable_seqscan = off');
    await tx.exec('SET LOCAL plan_cache_mode = force_generic_plan');
    const plans: PlanNode[] = [];
    let n = 0;
    for (const s of log) {
      if (s.params === undefined) continue;
      const name = `generic_plan_${n++}`;
      await tx.exec(`PREPARE ${name} AS ${s.sql}`);
      const args = s.params.length > 0 ? `(${s.params.map(literal).join(', ')})` : '';
      const res = await tx.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name}${args}`);
      await tx.exec(`DEALLOCATE ${name}`);
      const raw = res.rows[0]!['QUERY PLAN'];
      plans.push(await asOneTablePlan(tx, ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0]!.Plan));
    }
    return plans;
  });
}

/**
 * Only the claim walks an index of the inbox without a key: its own order,
 * inbox_claim_order_idx. inbox_attempts holds one row per batch in flight and
 * is read whole on purpose (hashed once per statement).
 */
const unkeyed = (plan: PlanNode, allowed: readonly string[] = []): string[] =>
  unkeyedInboxReads(plan, (index) => index !== 'inbox_attempts_pkey' && !allowed.includes(index));

describe.each(await availableStoreKinds())('worker statements with stale statistics on %s', (kind) => {
  let store: TestStore;
  const claimed: string[] = [];
  let batchId = '';

  beforeAll(async () => {
    store = await openTestStore(kind);
    if (kind === 'postgres') await disableInboxAutovacuum(store.db);
    for (let i = 0; i < HISTORY + BACKLOG; i += 200) {
      await insertInboxBatch(
        store.db,
        Array.from({ length: 200 }, (_, k) => row(i + k)),
      );
      // Statistics from a quiet moment: every earlier event is finished, the partial indexes over the backlog are empty.
      if (i + 200 === HISTORY) {
        await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now()`);
        await store.db.exec('VACUUM ANALYZE inbox');
      }
    }
    // Another worker has part of the backlog in hand.
    // Part of the backlog, so that ten correspondences are left for the next claim.
    const batch = await claimBatch(store.db, { workerId: 'other', limit: 30, orderingHoldSeconds: 0 });
    claimed.push(...batch!.events.map((e) => e.event_id));
    batchId = batch!.batchId;
  });
  afterAll(async () => store?.cleanup());

  it('the claim walks the claim order once and finds what holds an event back by its correspondence', async () => {
    const steps = await recorded(store.db, (tx) =>
      claimBatch({ transaction: (fn) => fn(tx) } as Pick<Db, 'transaction'>, {
        workerId: 'w1',
        limit: 100,
        orderingHoldSeconds: 30,
      }),
    );
    for (const plans of kind === 'postgres'
      ? [await plansOf(store.db, steps), await genericPlansOf(store.db, steps)]
      : [await plansOf(store.db, steps)]) {
      expect(plans).toHaveLength(1);
      expect(unkeyed(plans[0]!, ['inbox_claim_order_idx'])).toEqual([]);
    }
  });

  it('taking and completing a claimed batch find its rows by event id', async () => {
    const ids = claimed.slice(0, 15);
    const complete = await recordedCompletion(store.db, batchId, ids);
    for (const plan of await plansOf(store.db, complete)) expect(unkeyed(plan)).toEqual([]);
    if (kind === 'postgres') for (const plan of await genericPlansOf(store.db, complete)) expect(unkeyed(plan)).toEqual([]);
  });

  it("the reaper finds a stopped worker's events by event id", async () => {
    await store.db.query(
      `INSERT INTO inbox_attempts (worker_id, event_ids, started_at, claimed_under_lock) VALUES ('gone', $1, now() - interval '1 hour', true)`,
      [claimed.slice(15)],
    );
    const reap = await recorded(store.db, (tx) => reapOrphanedAttempts(tx, 10, 60));
    for (const plan of await plansOf(store.db, reap)) expect(unkeyed(plan)).toEqual([]);
  });
});

/** Nested loops that run a function scan (an unnested batch) again for every row of their outer side. */
function rescannedFunctions(node: PlanNode, out: string[] = []): string[] {
  if (node['Node Type'] === 'Nested Loop') {
    const inner = node.Plans?.[1];
    if (
      inner?.['Node Type'] === 'Function Scan' ||
      (inner?.['Node Type'] === 'Materialize' && inner.Plans?.[0]?.['Node Type'] === 'Function Scan')
    )
      out.push('Function Scan run once per outer row');
  }
  for (const child of node.Plans ?? []) rescannedFunctions(child, out);
  return out;
}

/**
 * A connection keeps the generic plan it settled on after five runs until the
 * inbox is next analysed, and autovacuum looks at most once a minute. On a new
 * installation, or after a restart on a small inbox, the worker's plans are made
 * while the inbox holds a few rows: reading it whole is then the cheapest plan,
 * and it stays the plan as the inbox grows: in `serve` from an empty inbox
 * every claim would read the whole inbox to fetch its events, and every
 * completion read it whole or run the unnested batch once per event, for as
 * long as the run lasted.
 * The plans above are checked as if the inbox were large (sequential scans off);
 * these are checked as they are cached, on a small inbox.
 */
describe.skipIf(!(await availableStoreKinds()).includes('postgres'))('worker statements planned on a small inbox (postgres)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    await disableInboxAutovacuum(store.db);
    await insertInboxBatch(
      store.db,
      Array.from({ length: 30 }, (_, i) => row(i)),
    );
    await store.db.exec('ANALYZE inbox');
  });
  afterAll(async () => store?.cleanup());

  it('claiming and completing read the inbox by key and run the batch once', async () => {
    let batchId = '';
    let ids: string[] = [];
    const claim = await recorded(store.db, async (tx) => {
      const batch = await claimBatch({ transaction: (fn) => fn(tx) } as Pick<Db, 'transaction'>, {
        workerId: 'w1',
        limit: 100,
        orderingHoldSeconds: 30,
      });
      batchId = batch!.batchId;
      ids = batch!.events.map((e) => e.event_id);
    });
    const complete = await recordedCompletion(store.db, batchId, ids);
    const plans = [
      ...(await genericPlansOf(store.db, claim, { asIfLarge: false })),
      ...(await genericPlansOf(store.db, complete, { asIfLarge: false })),
    ];
    expect(plans).toHaveLength(3);
    const [claimed, take, done] = plans;
    expect({
      claim: unkeyed(claimed!, ['inbox_claim_order_idx']),
      take: unkeyed(take!),
      complete: [...unkeyed(done!), ...rescannedFunctions(done!)],
    }).toEqual({ claim: [], take: [], complete: [] });
  });
});

/** Every node of a plan, depth first. */
function nodesOf(node: PlanNode, out: PlanNode[] = []): PlanNode[] {
  out.push(node);
  for (const child of node.Plans ?? []) nodesOf(child, out);
  return out;
}

/**
 * `serve` under steady load: a backlog of a few hundred events, most of their
 * correspondences with an event in a batch in flight, and statistics that are
 * up to date. The claim must still walk inbox_claim_order_idx in order and stop
 * at its limit, not run a bitmap scan of the backlog and a sort, which runs the
 * ordering check (an index probe per row) on every runnable event before taking
 * the first hundred: about 1,800 buffers per claim for a backlog of 800, against
 * 560 walking the order. The claim's own `enable_seqscan = off` could bring that
 * plan on: it prices a sequential read of inbox_attempts (a handful of rows) as
 * disabled too, inside the ordering check costed once per row, so every plan of
 * the claim would look disabled and the comparison between them mean nothing
 * (src/inbox/in-flight.ts).
 */
describe.each(await availableStoreKinds())('the claim on a steady backlog with fresh statistics on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
    // As in `serve`'s bench: 500 correspondences, and what came before finished.
    const steady = (i: number): NewInboxEvent => ({ ...row(i), correspondenceId: `cor_${i % 500}` });
    for (let i = 0; i < 20_000; i += 1000)
      await insertInboxBatch(
        store.db,
        Array.from({ length: 1000 }, (_, k) => steady(i + k)),
      );
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now()`);
    for (let i = 20_000; i < 20_800; i += 200)
      await insertInboxBatch(
        store.db,
        Array.from({ length: 200 }, (_, k) => steady(i + k)),
      );
    // Other loops hold the first 300 events of the backlog in three batches.
    const first = await store.db.query<{ event_id: string }>(
      `SELECT event_id FROM inbox WHERE status = 'received' ORDER BY occurred_at, event_id COLLATE "C" LIMIT 300`,
    );
    const ids = first.rows.map((r) => r.event_id);
    for (let b = 0; b < 3; b++)
      await store.db.query(`INSERT INTO inbox_attempts (worker_id, event_ids, claimed_under_lock) VALUES ('other', $1, true)`, [
        ids.slice(b * 100, b * 100 + 100),
      ]);
    await store.db.exec('VACUUM ANALYZE inbox');
    await store.db.exec('ANALYZE inbox_attempts');
  });
  afterAll(async () => store?.cleanup());

  it('walks the claim order to its limit instead of checking every runnable event and sorting', async () => {
    const steps = await recorded(store.db, (tx) =>
      claimBatch({ transaction: (fn) => fn(tx) } as Pick<Db, 'transaction'>, { workerId: 'w1', limit: 100, orderingHoldSeconds: 300 }),
    );
    // As the connection plans it: the claim's own settings, nothing forced.
    const claim = await store.db.transaction(async (tx) => {
      for (const s of steps) if (s.params === undefined) await tx.exec(s.sql);
      const statement = steps.find((s) => s.params !== undefined)!;
      return explain(tx, statement.sql, statement.params!);
    });
    // The scan, not the batch's rows (at most the limit), which the statement returns in the order they must run.
    const scan = nodesOf(claim).find((n) => n['Subplan Name'] === 'CTE candidates');
    expect(scan).toBeDefined();
    const nodes = nodesOf(scan!);
    const inboxReads = nodes
      .filter((n) => n['Relation Name'] === 'inbox' && n['Index Name'] !== 'inbox_ordering_idx')
      .map((n) => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`);
    expect({ sorted: nodes.some((n) => n['Node Type'].endsWith('Sort')), inboxReads }).toEqual({
      sorted: false,
      inboxReads: ['Index Scan on inbox_claim_order_idx'],
    });
  });
});
