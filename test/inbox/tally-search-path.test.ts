import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { inboxStatusCounts } from '../../src/inbox/count-queries.js';
import { adminUrl, openTestStore } from '../support/db.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * The statement triggers that keep the finished-event tally run for every writer of
 * the inbox, not only postroom's own connections: an on-call engineer in psql, with
 * the default search_path, must be able to change rows and leave the counts right.
 */
describe.skipIf(!(await adminUrl()))('the inbox tally, changed from a session without postroom on its search_path', () => {
  it('follows UPDATE, DELETE and TRUNCATE of the qualified table', async () => {
    const store = await openTestStore('postgres');
    cleanups.push(store.cleanup);
    const schema = store.db.schema;
    const psql = new pg.Client({ connectionString: store.url });
    await psql.connect();
    cleanups.push(() => psql.end());
    expect((await psql.query<{ search_path: string }>('SHOW search_path')).rows[0]!.search_path).not.toContain(schema);

    const inbox = `${schema}.inbox`;
    await psql.query(
      `INSERT INTO ${inbox} (event_id, type, status, received_at) VALUES ('evt_ops_1', 'participant.acted', 'received', now()), ('evt_ops_2', 'participant.acted', 'received', now()), ('evt_ops_3', 'notice.read', 'received', now())`,
    );
    await psql.query(`UPDATE ${inbox} SET status = 'processed', processed_at = now()`);
    expect((await inboxStatusCounts(store.db)).by_status.processed).toBe(3);
    await psql.query(`DELETE FROM ${inbox} WHERE event_id = 'evt_ops_1'`);
    expect((await inboxStatusCounts(store.db)).by_status.processed).toBe(2);
    await psql.query(`TRUNCATE ${inbox}`);
    expect((await inboxStatusCounts(store.db)).by_status.processed ?? 0).toBe(0);
    // A rebuild from the same session agrees with the rows.
    await psql.query(`INSERT INTO ${inbox} (event_id, type, status, received_at) VALUES ('evt_ops_4', 'notice.read', 'skipped', now())`);
    await psql.query(`SELECT ${schema}.inbox_tally_rebuild()`);
    expect((await inboxStatusCounts(store.db)).by_status.skipped).toBe(1);
  });
});
