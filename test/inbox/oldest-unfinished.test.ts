import { afterAll, describe, expect, it } from 'vitest';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { inboxStatusCounts } from '../../src/inbox/read-queries.js';
import { inboxStats } from '../../src/inbox/admin-queries.js';
import { availableStoreKinds, createPastPartitions, openTestStore } from '../support/db.js';
import { explain, recording, unkeyedInboxReads } from '../support/plans.js';
import { envelope, toRow } from '../worker/support.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const event = (id: string, cid = 'cor_1') => toRow(envelope('participant.acted', { correspondence_id: cid }, '2026-11-18T10:15:00Z', id));

describe.each(await availableStoreKinds())('the oldest unfinished event on %s', (kind) => {
  it('names the oldest unfinished event, in receipt order, whatever its status', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    await createPastPartitions(store.db, 2);
    const ids = ['evt_old_a', 'evt_old_b', 'evt_old_c', 'evt_old_d'];
    for (const id of ids) await insertInboxBatch(store.db, [event(id, `cor_${id}`)]);
    // Receipt times an hour apart, oldest first; then the oldest finishes and the next one fails.
    await store.db.query(
      `UPDATE inbox SET received_at = now() - make_interval(hours => 10 - array_position($1::text[], event_id)) WHERE event_id = ANY($1::text[])`,
      [ids],
    );
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now() WHERE event_id = 'evt_old_a'`);
    await store.db.query(`UPDATE inbox SET status = 'failed', last_error = 'x' WHERE event_id = 'evt_old_b'`);

    const stats = await inboxStats(store.db);
    expect(stats.oldest_unprocessed?.event_id).toBe('evt_old_b');
    expect(stats.oldest_unprocessed?.age_seconds).toBeGreaterThanOrEqual(8 * 3600 - 5);
    expect(stats.oldest_unprocessed?.age_seconds).toBeLessThan(8 * 3600 + 60);
    const counts = await inboxStatusCounts(store.db);
    expect(counts.oldestUnfinishedAgeSeconds).toBeCloseTo(stats.oldest_unprocessed!.age_seconds, -1);

    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now() WHERE event_id <> 'evt_old_d'`);
    expect((await inboxStats(store.db)).oldest_unprocessed?.event_id).toBe('evt_old_d');
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now()`);
    expect((await inboxStats(store.db)).oldest_unprocessed).toBeNull();
    expect((await inboxStatusCounts(store.db)).oldestUnfinishedAgeSeconds).toBe(0);
  });

  /**
   * The oldest unfinished event comes from inbox_unfinished_idx. Without it (a scratch build dropped it at stop
   * 36), the plain question (ORDER BY received_at LIMIT 1) lets the planner walk inbox_received_idx from the first
   * event ever received, expecting an unfinished one soon when the backlog is a large share of what it last
   * sampled, and reading every finished event before the young backlog: 1.2 s at three million events.
   * 10,000 rows, the newest 2,000 unfinished, are enough for the planner to choose that walk here.
   */
  it('reads the backlog, not every event received, to find the oldest unfinished one', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    await createPastPartitions(store.db, 2);
    await store.db.query(
      `INSERT INTO inbox (event_id, type, occurred_at, raw_body, correspondence_id, status, received_at)
       SELECT 'evt_walk_' || g, 'participant.acted', now(), '\\x00', 'cor_' || (g % 100),
              CASE WHEN g > 8000 THEN 'received' ELSE 'processed' END, now() - interval '1 day' + g * interval '1 s'
       FROM generate_series(1, 10000) g`,
    );
    await store.db.exec('ANALYZE inbox');
    const rec = recording(store.db);
    const stats = await inboxStats(rec.q);
    await inboxStatusCounts(rec.q);
    expect(stats.oldest_unprocessed?.event_id).toBe('evt_walk_8001');
    const walks: string[] = [];
    for (const text of rec.sql) {
      for (const p of unkeyedInboxReads(await explain(store.db, text), (index) => index === 'inbox_received_idx'))
        walks.push(`${p}: ${text.replace(/\s+/g, ' ').trim().slice(0, 100)}`);
    }
    expect(walks).toEqual([]);
  });
});
