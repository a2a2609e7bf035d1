import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { migrate } from '../../src/db/migrate.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import type { Queryable } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { insertBeforeLedger, migrationsBefore } from '../support/migrations.js';
import { envelope, toRow } from '../worker/support.js';
import { TEST_SECRET } from '../support/receiver.js';

/**
 * `postroom migrate` moves an existing inbox into the partitioned layout with ingress serving. The default
 * run loads 20,000 rows; POSTROOM_TEST_MIGRATE_ROWS=1000000 runs it at a million (minutes, not in CI).
 */
const ROWS = Number(process.env.POSTROOM_TEST_MIGRATE_ROWS ?? 20_000);

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Count, statuses, and an order-free checksum of every id with its body, received time and status. */
async function fingerprint(q: Queryable, where = 'true'): Promise<{ n: number; sum: string; statuses: Record<string, number> }> {
  const res = await q.query<{ n: string; sum: string }>(
    `SELECT count(*) AS n, sum(('x' || substr(md5(event_id || coalesce(encode(raw_body, 'hex'), '') || received_at::text || status), 1, 15))::bit(60)::bigint)::text AS sum
     FROM inbox WHERE ${where}`,
  );
  const statuses = await q.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM inbox WHERE ${where} GROUP BY status`);
  return {
    n: Number(res.rows[0]!.n),
    sum: res.rows[0]!.sum,
    statuses: Object.fromEntries(statuses.rows.map((r) => [r.status, Number(r.n)])),
  };
}

describe.each(await availableStoreKinds())('moving an existing inbox into partitions on %s', (kind) => {
  it(`keeps every row, status and id of ${ROWS} while ingress answers throughout`, { timeout: 1_800_000 }, async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(23, cleanups) });
    // Ten days of history; one row in a hundred still needs work or attention, as in a live installation.
    await store.db.query(
      `INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, processed_at, correspondence_id)
       SELECT 'evt_old_' || g, 'participant.acted', now() - g * interval '800 ms', now() - g * interval '800 ms',
              convert_to('{"event_id":"evt_old_' || g || '","n":' || g || '}', 'UTF8'),
              CASE WHEN g % 100 = 1 THEN 'dead' WHEN g % 100 = 2 THEN 'received' WHEN g % 100 = 3 THEN 'quarantined'
                   WHEN g % 10 = 4 THEN 'skipped' ELSE 'processed' END,
              CASE WHEN g % 100 > 3 THEN now() END, 'cor_' || (g % 5000)
       FROM generate_series(1, $1::int) g`,
      [ROWS],
    );
    const before = await fingerprint(store.db);
    expect(before.n).toBe(ROWS);

    // This build's ingress, serving from the layout of 023 on: every id goes through the ledger.
    await migrate(store.db, { dir: migrationsBefore(24, cleanups) });
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', POSTROOM_WEBHOOK_SECRETS: TEST_SECRET });
    const server = await startServer({ config, logger: silentLogger(), db: store.db, role: 'ingress', migrate: false });
    cleanups.push(() => server.close());
    const hook = `${server.url}/webhooks`;

    const answers: Array<{ status: number; outcome: string | undefined }> = [];
    const accepted: string[] = [];
    let migrating = true;
    const traffic = (async () => {
      for (let i = 0; migrating || i < 5; i++) {
        // New events, and redeliveries of ids stored before the move, which must stay duplicates.
        const fresh = makeEvent();
        const old = makeEvent({ event_id: `evt_old_${1 + ((i * 7919) % ROWS)}` });
        for (const event of [fresh, old]) {
          const res = await postEvent(hook, event, { secret: TEST_SECRET });
          answers.push({ status: res.status, outcome: res.body.status });
          if (res.body.status === 'accepted') accepted.push(event.event_id);
        }
      }
    })();
    const progress: string[] = [];
    await migrate(store.db, { onProgress: (p) => progress.push(p.step) });
    migrating = false;
    await traffic;

    expect(progress).toContain('ledger');
    expect(progress).toContain('history');
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    // Every redelivery of an old id answered duplicate; every new one was accepted.
    expect(accepted.every((id) => !id.startsWith('evt_old_'))).toBe(true);
    expect(answers.filter((a) => a.outcome === 'accepted')).toHaveLength(answers.length / 2);
    const after = await fingerprint(store.db, `event_id LIKE 'evt_old_%'`);
    expect(after).toEqual(before);
    expect((await fingerprint(store.db)).n).toBe(ROWS + accepted.length);
    const ledger = await store.db.query<{ n: string }>('SELECT count(*) AS n FROM inbox_ids');
    expect(Number(ledger.rows[0]!.n)).toBe(ROWS + accepted.length);
    const layout = await store.db.query<{ partitioned: boolean; leftover: boolean }>(
      `SELECT (SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('inbox')) AS partitioned,
              to_regclass('inbox_unpartitioned') IS NOT NULL AS leftover`,
    );
    expect(layout.rows[0]).toEqual({ partitioned: true, leftover: false });
  });

  it('answers duplicate for a stored id the ledger does not hold yet, before its backfill', async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(23, cleanups) });
    const old = toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-18T10:15:00Z', 'evt_before_ledger'));
    await insertBeforeLedger(store.db, [old]);
    // 023 alone: the triggers record what is written from now on; the backfill runs only before 024.
    await migrate(store.db, { dir: migrationsBefore(24, cleanups) });
    const fresh = toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-18T10:16:00Z', 'evt_after_ledger'));
    expect(await insertInboxBatch(store.db, [old, fresh])).toEqual(new Set(['evt_after_ledger']));
    const rows = await store.db.query<{ n: string }>(`SELECT count(*) AS n FROM inbox WHERE event_id = 'evt_before_ledger'`);
    expect(Number(rows.rows[0]!.n)).toBe(1);
  });
});
