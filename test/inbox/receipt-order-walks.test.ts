import { afterAll, describe, expect, it } from 'vitest';
import { pageReplayable, type InboxCursor } from '../../src/inbox/admin-queries.js';
import { replayMatching } from '../../src/worker/replay.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { insertFlush } from '../worker/support.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe.each(await availableStoreKinds())('walks of the inbox in receipt order on %s', (kind) => {
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
