import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/types.js';
import { TEST_EVENT_TYPE } from '../../src/events/type-names.js';
import { noteStillQuarantined, resetForReplay } from '../../src/inbox/admin-queries.js';
import { earlierUnfinished } from '../../src/inbox/browse-queries.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { storedProbeEvent } from '../../src/probe/probe-queries.js';
import { recoverGapsReceivedLater, upsertGaps, type NewGap } from '../../src/reconciler/gap-queries.js';
import { reapOrphanedAttempts } from '../../src/worker/claim-queries.js';
import { availableStoreKinds, createPastPartitions, openTestStore, type TestStore } from '../support/db.js';
import { partitionsPlanned, partitionsRead, sentBy, type Setup } from '../support/plans.js';

/**
 * Statements that look up many events by id read only the days those events were received on, named by the
 * ledger (inbox_ids): the inbox's id indexes are per day, and an id alone makes Postgres read every day that
 * retention keeps (90 by default). Joined on the id alone, recovering gaps read every partition whole; the
 * cost grew with the history, to 3.19x at 10 million events.
 */

const DAYS = 8;
const PER_DAY = 20;

const partitionOf = (daysAgo: number): string =>
  `inbox_p${new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '')}`;
const idOf = (daysAgo: number, n: number): string => `evt_day${daysAgo}_${n}`;

/** PER_DAY processed events on each of the DAYS days before today and today, at noon UTC, with their ledger rows. */
async function fillHistory(q: Queryable): Promise<void> {
  await createPastPartitions(q, DAYS);
  await q.query(
    `WITH put AS (
       INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, correspondence_id, source)
       SELECT 'evt_day' || d || '_' || n, 'participant.acted', t, t, convert_to('{}', 'UTF8'), 'processed', 1, t, 'cor_' || n, 'webhook'
       FROM generate_series(0, $1::int) d, generate_series(1, $2::int) n,
            LATERAL (SELECT (((now() AT TIME ZONE 'UTC')::date - d)::timestamp + interval '12 hours' + make_interval(secs => n)) AT TIME ZONE 'UTC' AS t) x
       RETURNING event_id, received_at)
     INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM put`,
    [DAYS, PER_DAY],
  );
  // Both analyzed, as autovacuum soon would: the plans must not depend on whether it has yet.
  await q.exec('ANALYZE inbox');
  await q.exec('ANALYZE inbox_ids');
}

const gapOf = (eventId: string, deliveryId: string): NewGap => ({
  eventId,
  eventType: 'participant.acted',
  endpointId: 'ep_1',
  deliveryId,
  deliveryCreatedAt: null,
  lastError: 'timeout',
  correspondenceId: null,
  reason: null,
});

/** The partitions of days before `daysAgo` (older ones) that a statement must not read. */
const olderThan = (daysAgo: number): string[] => Array.from({ length: DAYS - daysAgo }, (_, i) => partitionOf(daysAgo + 1 + i));

describe.each(await availableStoreKinds())('many-id statements read only the days the ledger names, on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await fillHistory(store.db);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('recovering gaps reads the partition of each event that arrived, and no other', async () => {
    const gaps: Setup = (q) =>
      upsertGaps(q, [
        ...[3, 7].map((n) => gapOf(idOf(5, n), `dlv_${n}`)),
        ...Array.from({ length: 10 }, (_, n) => gapOf(`evt_never_${n}`, `dlv_never_${n}`)),
      ]);
    const statements = await sentBy(
      store.db,
      async (q) => {
        expect(await recoverGapsReceivedLater(q, null)).toBe(2);
      },
      gaps,
    );
    const read = await partitionsRead(store.db, statements, gaps);
    expect([...read.keys()]).toEqual([partitionOf(5)]);
    expect(read.get(partitionOf(5))!.every((how) => how !== 'Seq Scan')).toBe(true);
  });

  it('records where the recovered event came from and when it was stored', async () => {
    await upsertGaps(store.db, [gapOf(idOf(2, 4), 'dlv_src')]);
    expect(await recoverGapsReceivedLater(store.db, null)).toBe(1);
    const gap = await store.db.query<{ status: string; evidence: Record<string, unknown>; received_at: Date }>(
      `SELECT g.status, g.evidence, i.received_at FROM reconcile_gaps g JOIN inbox_ids i USING (event_id) WHERE g.event_id = $1`,
      [idOf(2, 4)],
    );
    expect(gap.rows[0]).toMatchObject({ status: 'recovered', evidence: { kind: 'event_received', source: 'webhook' } });
    expect(new Date(String(gap.rows[0]!.evidence.received_at)).getTime()).toBe(gap.rows[0]!.received_at.getTime());
  });

  it('reaping an abandoned batch reads no day before its earliest event', async () => {
    const batch = [idOf(3, 1), idOf(3, 2), idOf(1, 5)];
    const abandoned: Setup = async (q) => {
      await q.query(`UPDATE inbox SET status = 'received', processed_at = NULL WHERE event_id = ANY($1::text[])`, [batch]);
      await q.query(
        `INSERT INTO inbox_attempts (worker_id, event_ids, claimed_under_lock, started_at) VALUES ('gone', $1::text[], true, now() - interval '1 hour')`,
        [batch],
      );
    };
    const statements = await sentBy(
      store.db,
      async (q) => {
        const reaped = await reapOrphanedAttempts(q, 5, 30);
        expect(reaped.map((r) => r.event_id).sort()).toEqual([...batch].sort());
      },
      abandoned,
    );
    const read = await partitionsRead(store.db, statements, abandoned);
    expect([...read.keys()]).toContain(partitionOf(3));
    for (const older of olderThan(3)) expect(read.has(older), older).toBe(false);
  });

  it('a replay by id reads the days between its earliest and latest events, and no other', async () => {
    const ids = [idOf(4, 1), idOf(4, 2), idOf(6, 3)];
    const statements = await sentBy(store.db, async (q) => {
      expect(
        (
          await resetForReplay(
            q,
            ids.map((eventId) => ({ eventId, fromStatus: 'processed' as const })),
          )
        ).sort(),
      ).toEqual([...ids].sort());
      await noteStillQuarantined(q, idOf(4, 1), 'still no envelope');
    });
    const read = await partitionsRead(store.db, statements);
    // The days from the earliest event's to the latest's, and no other.
    expect([...read.keys()]).toEqual(expect.arrayContaining([partitionOf(4), partitionOf(6)]));
    for (const name of read.keys()) expect([4, 5, 6].map(partitionOf), name).toContain(name);
  });

  it("a read of one event by id (inbox show, the console's event page) plans that event's day alone", async () => {
    const statements = await sentBy(store.db, async (q) => {
      expect(await getInboxEvent(q, idOf(3, 1))).toMatchObject({ event_id: idOf(3, 1) });
    });
    expect([...(await partitionsPlanned(store.db, statements)).keys()]).toEqual([partitionOf(3)]);
  });

  it("the event page's search for an earlier unfinished event plans only the days since the oldest unfinished one", async () => {
    // Two unfinished events of one correspondence, received today; the rest of the history is finished.
    const unfinished: Setup = (q) =>
      q.query(
        `WITH put AS (
           INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, correspondence_id, source)
           SELECT 'evt_hold_' || n, 'participant.acted', now() - make_interval(mins => 10 - n), now(), convert_to('{}', 'UTF8'),
                  'failed', 1, 'cor_hold', 'webhook'
           FROM generate_series(1, 2) n
           RETURNING event_id, received_at)
         INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM put`,
      );
    const later = { correspondenceId: 'cor_hold', occurredAt: new Date(Date.now() - 8 * 60_000), eventId: 'evt_hold_2' };
    const statements = await sentBy(
      store.db,
      async (q) => {
        expect(await earlierUnfinished(q, later)).toMatchObject({ event_id: 'evt_hold_1' });
      },
      unfinished,
    );
    // Today's partition and those made ahead for the next days; none of the days before.
    const planned = [...(await partitionsPlanned(store.db, statements, unfinished)).keys()];
    expect(planned).toContain(partitionOf(0));
    expect(planned.filter((name) => olderThan(0).includes(name))).toEqual([]);
  });

  it("the probe's read of its stored event reads that event's day, whether the service named it or not", async () => {
    const probeId = Number(
      (
        await store.db.query<{ probe_id: number }>(
          `INSERT INTO probe_runs (plane, endpoint_id, requested_at) VALUES ('sandbox', 'ep_probe', now() - interval '1 second') RETURNING probe_id::int AS probe_id`,
        )
      ).rows[0]!.probe_id,
    );
    await store.db.query(
      `WITH put AS (INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, source)
         VALUES ('evt_probe_1', $1, now(), now(), convert_to('{}', 'UTF8'), 'processed', 1, now(), 'webhook') RETURNING event_id, received_at)
       INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM put`,
      [TEST_EVENT_TYPE],
    );
    for (const eventId of ['evt_probe_1', null]) {
      const statements = await sentBy(store.db, async (q) => {
        expect(await storedProbeEvent(q, { probeId, eventId })).toMatchObject({ event_id: 'evt_probe_1' });
      });
      const read = await partitionsRead(store.db, statements);
      expect([...read.keys()], String(eventId)).toContain(partitionOf(0));
      for (const older of olderThan(0)) expect(read.has(older), `${String(eventId)}: ${older}`).toBe(false);
    }
  });
});
