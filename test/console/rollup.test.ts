import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { minuteCounts } from '../../src/inbox/count-queries.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { silentLogger } from '../../src/logging/logger.js';
import { replayEvent } from '../../src/worker/replay.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

const event = (i: number, type = 'participant.acted') =>
  inboxRowFromEnvelope(
    {
      event_id: `evt_roll_${i}`,
      type,
      at: new Date().toISOString(),
      data: { correspondence_id: `cor_${i % 3}`, participant_id: 'p', act: 'read', ref: 'r' },
    },
    'webhook',
  );

/** inbox_minutes, kept by statement triggers: what the console's charts read instead of counting the inbox. */
describe.each(kinds)('events per minute on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.cleanup());

  const totals = async (): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const c of await minuteCounts(store.db, new Date(Date.now() - 3_600_000), 60)) out[c.kind] = (out[c.kind] ?? 0) + c.n;
    return out;
  };

  it('counts what a flush inserted (duplicates not), and what the worker finished', async () => {
    await insertInboxBatch(store.db, [event(1), event(2), event(3)]);
    // A redelivery: nothing new is inserted, nothing counted.
    await insertInboxBatch(store.db, [event(2), event(3), event(4)]);
    expect(await totals()).toEqual({ received: 4 });
    await insertInboxBatch(store.db, [event(5), event(6)]);
    expect(await totals()).toEqual({ received: 6 });

    const postroom = createPostroom({ db: store.db, logger: silentLogger() });
    postroom.on('participant.acted', () => undefined);
    await postroom.drain();
    expect(await totals()).toEqual({ received: 6, finished: 6 });

    // Rewriting finished rows (prune) adds nothing; a replayed event counts again when it finishes again.
    await store.db.query(`UPDATE inbox SET pruned_at = now() WHERE event_id = 'evt_roll_1'`);
    expect(await totals()).toEqual({ received: 6, finished: 6 });
    await replayEvent(store.db, 'evt_roll_2');
    await postroom.drain();
    const after = await totals();
    expect(after.received).toBe(6);
    expect(after.finished).toBe(6);
  });

  it('keeps three days: a row of a new minute prunes what is older', async () => {
    await store.db.query(`INSERT INTO inbox_minutes (minute, kind, shard, n) VALUES (now() - interval '4 days', 'received', 0, 5)`);
    await store.db.query(`DELETE FROM inbox_minutes WHERE minute >= now() - interval '1 day'`);
    await insertInboxBatch(store.db, [event(100)]);
    const old = await store.db.query(`SELECT 1 FROM inbox_minutes WHERE minute < now() - interval '3 days'`);
    expect(old.rowCount).toBe(0);
  });
});
