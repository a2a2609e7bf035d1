import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { envelope, toRow } from '../worker/support.js';
import { insertBeforeLedger, migrationsBefore } from '../support/migrations.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const event = (id: string) => toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-18T10:15:00Z', id));

describe.each(await availableStoreKinds())('the event id as a hash index (migration 012) on %s', (kind) => {
  it('upgrades an existing inbox without losing a row, and its ids still de-duplicate', async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(12, cleanups) });
    const old = Array.from({ length: 5 }, (_, i) => `evt_before_${i}`);
    expect(
      await insertBeforeLedger(
        store.db,
        old.map((id) => event(id)),
      ),
    ).toEqual(new Set(old));
    const before = (await store.db.query('SELECT event_id, status, raw_body FROM inbox ORDER BY event_id')).rows;

    await migrate(store.db, { dir: migrationsBefore(23, cleanups) });

    expect((await store.db.query('SELECT event_id, status, raw_body FROM inbox ORDER BY event_id')).rows).toEqual(before);
    const constraints = (
      await store.db.query<{ conname: string; contype: string; method: string }>(
        `SELECT c.conname, c.contype, am.amname AS method
         FROM pg_constraint c JOIN pg_class i ON i.oid = c.conindid JOIN pg_am am ON am.oid = i.relam
         WHERE c.conrelid = to_regclass('inbox')`,
      )
    ).rows;
    expect(constraints).toEqual([{ conname: 'inbox_event_id_excl', contype: 'x', method: 'hash' }]);
    // The same ids de-duplicate once the ledger holds them (migration 023) and the inbox is partitioned (024).
    await migrate(store.db);
    expect((await store.db.query('SELECT event_id, status, raw_body FROM inbox ORDER BY event_id')).rows).toEqual(before);
    // An id from before the upgrade, again with new ones in one flush: only the new ones are written.
    const inserted = await insertInboxBatch(store.db, [event(old[2]!), event('evt_after_1'), event('evt_after_2')]);
    expect(inserted).toEqual(new Set(['evt_after_1', 'evt_after_2']));
    expect(Number((await store.db.query<{ n: string }>('SELECT count(*) AS n FROM inbox')).rows[0]!.n)).toBe(7);
    // Written any other way, a second copy of an id is refused by the ledger's constraint itself.
    await expect(store.db.query(`INSERT INTO inbox_ids (event_id, received_at) VALUES ($1, now())`, [old[0]])).rejects.toMatchObject({
      code: '23P01',
    });
  });
});
