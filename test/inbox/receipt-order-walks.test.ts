import { afterAll, describe, expect, it } from 'vitest';
import { pageReplayable, prunePage, type InboxCursor } from '../../src/inbox/admin-queries.js';
import { replayMatching } from '../../src/worker/replay.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { insertFlush } from '../worker/support.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe.each(await availableStoreKinds())('walks of the inbox in receipt order on %s', (kind) => {
  it('prunes every finished row once, in pages smaller than a flush whose rows share received_at', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    // Two flushes: every row of one flush has the same received_at (its transaction's now()).
    await insertFlush(store.db, 'evt_p_b', 7);
    await insertFlush(store.db, 'evt_p_a', 6);
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now() - interval '2 days' WHERE event_id <> $1`, [
      'evt_p_a_003',
    ]);
    const shared = await store.db.query<{ n: string }>('SELECT count(DISTINCT received_at) AS n FROM inbox');
    expect(Number(shared.rows[0]!.n)).toBe(2);

    let after: InboxCursor | null = null;
    let pruned = 0;
    const stops: string[] = [];
    for (;;) {
      const page = await prunePage(store.db, 86_400_000, after, 3);
      pruned += page.pruned;
      if (page.last === null) break;
      stops.push(page.last.eventId);
      after = page.last;
      expect(stops.length).toBeLessThan(20);
    }
    expect(pruned).toBe(12);
    // Each page ends at its last row in receipt order, the third one inside the second flush.
    expect(stops).toEqual(['evt_p_b_002', 'evt_p_b_005', 'evt_p_a_001', 'evt_p_a_005']);
    const left = (await store.db.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE pruned_at IS NULL')).rows;
    expect(left).toEqual([{ event_id: 'evt_p_a_003' }]);
  });

  it('pages replay candidates in receipt order, each once, across rows that share received_at', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    const first = await insertFlush(store.db, 'evt_r_z', 5);
    const second = await insertFlush(store.db, 'evt_r_a', 4);
    await store.db.query(`UPDATE inbox SET status = 'dead', attempts = 5`);

    const seen: string[] = [];
    let after: InboxCursor | null = null;
    for (;;) {
      const page = await pageReplayable(store.db, { status: 'dead' }, after, 2);
      if (page.length === 0) break;
      seen.push(...page.map((r) => r.event_id));
      after = page[page.length - 1]!.cursor;
      expect(seen.length).toBeLessThanOrEqual(9);
    }
    // The first flush first (its rows by id), then the second.
    expect(seen).toEqual([...first, ...second]);

    const summary = await replayMatching(store.db, { status: 'dead' });
    expect(summary).toMatchObject({ matched: 9, replayed: 9 });
  });
});
