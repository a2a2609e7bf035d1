import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import type { Db } from '../../src/db/types.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { insertBeforeLedger, migrationsBefore } from '../support/migrations.js';
import { envelope, toRow } from '../worker/support.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const event = (id: string) => toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-18T10:15:00Z', id));

async function receivedIndex(db: Db): Promise<string[]> {
  const rows = await db.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename = 'inbox' AND indexname LIKE 'inbox_received%'`,
  );
  return rows.rows.map((r) => `${r.indexname}: ${r.indexdef.replace(/ ON (ONLY )?\S+\.inbox /, ' ON inbox ')}`);
}

const ASCENDING = 'inbox_received_idx: CREATE INDEX inbox_received_idx ON inbox USING btree (received_at)';

describe.each(await availableStoreKinds())('the receipt-time index (migration 014) on %s', (kind) => {
  /**
   * Events arrive in rising time. With the index descending, the newest key is the first in the index, and
   * Postgres splits every page but the right-hand one in half: the pages behind the newest key are never written
   * again, so the whole index stays half empty. Ascending, the newest key is the last, whose page splits 90/10.
   * Each flush is its own transaction, so each has its own received_at, as in production.
   */
  it('keeps its pages nearly full as events arrive, where a descending index stays half empty', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    // The layout before 014, beside the real index, on the same rows: the comparison needs nothing else.
    await store.db.exec('CREATE INDEX probe_received_desc ON inbox (received_at DESC)');
    for (let flush = 0; flush < 2_000; flush++) {
      await insertInboxBatch(
        store.db,
        Array.from({ length: 4 }, (_, i) => event(`evt_rx_${flush}_${i}`)),
      );
    }
    const sizes = (
      await store.db.query<{ ours: string; descending: string }>(
        `SELECT (SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree('inbox_received_idx')) AS ours,
                (SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree('probe_received_desc')) AS descending`,
      )
    ).rows[0]!;
    const ours = Number(sizes.ours);
    const descending = Number(sizes.descending);
    expect(descending).toBeGreaterThan(8 * 8192); // enough pages for the ratio to mean something
    expect(ours / descending).toBeLessThan(0.7);
    expect(await receivedIndex(store.db)).toEqual([ASCENDING]);
  });

  it('upgrades an existing inbox without losing a row, and newest-first and receipt-order reads keep their order', async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(14, cleanups) });
    for (let flush = 0; flush < 3; flush++) await insertBeforeLedger(store.db, [event(`evt_up_${flush}_a`), event(`evt_up_${flush}_b`)]);
    // A second apart per flush: PGlite's clock can give two quick flushes one instant, which would leave the
    // newest flush to the event-id tie-break.
    await store.db.exec(
      `UPDATE inbox SET received_at = timestamptz '2026-11-18 10:00:00+00' + split_part(event_id, '_', 3)::int * interval '1 second'`,
    );
    const newestFirst = 'SELECT event_id FROM inbox ORDER BY received_at DESC, event_id';
    const receiptOrder = 'SELECT event_id FROM inbox ORDER BY received_at, event_id';
    const before = { newest: (await store.db.query(newestFirst)).rows, oldest: (await store.db.query(receiptOrder)).rows };
    expect(before.newest[0]).toEqual({ event_id: 'evt_up_2_a' });

    await migrate(store.db);

    expect(await receivedIndex(store.db)).toEqual([ASCENDING]);
    expect({ newest: (await store.db.query(newestFirst)).rows, oldest: (await store.db.query(receiptOrder)).rows }).toEqual(before);
  });

  it('takes an index an operator built beforehand, and builds again one whose concurrent build failed or that differs', async () => {
    for (const prebuilt of ['valid', 'invalid', 'descending', 'partial', 'unique'] as const) {
      const store = await openTestStore(kind, { migrate: false });
      cleanups.push(store.cleanup);
      await migrate(store.db, { dir: migrationsBefore(14, cleanups) });
      // Two flushes, so two receipt times: a unique index on them can be built.
      await insertBeforeLedger(store.db, [event('evt_pre_1')]);
      await insertBeforeLedger(store.db, [event('evt_pre_2')]);
      // PGlite's clock can give two quick statements one instant.
      await store.db.exec(`UPDATE inbox SET received_at = received_at + interval '1 second' WHERE event_id = 'evt_pre_2'`);
      // As `CREATE INDEX CONCURRENTLY` leaves it: built, invalid (the build failed), or built with another key by
      // mistake. A fillfactor tells the one the migration keeps from the one it builds.
      const key = {
        valid: '(received_at)',
        invalid: '(received_at)',
        descending: '(received_at DESC)',
        partial: "(received_at) WHERE status = 'received'",
        unique: '(received_at)',
      }[prebuilt];
      const unique = prebuilt === 'unique' ? 'UNIQUE ' : '';
      await store.db.exec(
        `CREATE ${unique}INDEX inbox_received_asc_idx ON inbox ${key.replace(/( WHERE|$)/, ' WITH (fillfactor = 80)$1')}`,
      );
      if (prebuilt === 'invalid')
        await store.db.exec(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass('inbox_received_asc_idx')`);

      // What 014 made of it, on the unpartitioned inbox (024 moves the rows into a partitioned one).
      await migrate(store.db, { dir: migrationsBefore(23, cleanups) });

      const def = ASCENDING + (prebuilt === 'valid' ? " WITH (fillfactor='80')" : '');
      expect(await receivedIndex(store.db)).toEqual([def]);
      const validity = await store.db.query<{ ok: boolean }>(
        `SELECT indisvalid AS ok FROM pg_index WHERE indexrelid = to_regclass('inbox_received_idx')`,
      );
      expect(validity.rows).toEqual([{ ok: true }]);
    }
  });
});
