import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { inboxStatusCounts } from '../../src/inbox/read-queries.js';
import { claimBatch } from '../../src/worker/claim-queries.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { migrationsBefore } from '../support/migrations.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe.each(await availableStoreKinds())('upgrading an existing inbox to 007 on %s', (kind) => {
  it('keeps every row and payload, counts what was already there, and the worker reads the old rows', async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    await migrate(store.db, { dir: migrationsBefore(7, cleanups) });
    // Rows as the old insert wrote them: the body as jsonb and again as bytes.
    const statuses = ['processed', 'processed', 'skipped', 'dead', 'quarantined', 'received', 'failed', 'processed'];
    for (const [i, status] of statuses.entries()) {
      const body = JSON.stringify({
        event_id: `evt_old_${i}`,
        type: 'participant.acted',
        at: `2026-11-18T10:15:0${i}Z`,
        data: { correspondence_id: `cor_old_${i}` },
      });
      await store.db.query(
        `INSERT INTO inbox (event_id, type, occurred_at, payload, raw_body, status, correspondence_id, next_attempt_at)
         VALUES ($1, 'participant.acted', $2, $3::text::jsonb, convert_to($3::text, 'UTF8'), $4, $5, now() - interval '1 minute')`,
        [`evt_old_${i}`, `2026-11-18T10:15:0${i}Z`, body, status, `cor_old_${i}`],
      );
    }
    const before = await store.db.query<{ event_id: string; payload: unknown; raw_body: Uint8Array; status: string }>(
      'SELECT event_id, payload, raw_body, status FROM inbox ORDER BY event_id',
    );

    const applied = await migrate(store.db);
    expect(applied.applied.map((m) => m.version)).toContain(7);

    const after = await store.db.query<{ event_id: string; payload: unknown; raw_body: Uint8Array; status: string }>(
      'SELECT event_id, payload, raw_body, status FROM inbox ORDER BY event_id',
    );
    expect(after.rows).toEqual(before.rows);
    const counts = await inboxStatusCounts(store.db);
    expect(counts.by_status).toMatchObject({ processed: 3, skipped: 1, dead: 1, quarantined: 1, received: 1, failed: 1 });
    const indexes = (await store.db.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'inbox'`)).rows.map(
      (r) => r.indexname,
    );
    expect(indexes).toContain('inbox_attention_idx');
    expect(indexes).not.toContain('inbox_runnable_idx');
    expect(indexes).not.toContain('inbox_status_received_idx');

    const claimed = await claimBatch(store.db, { workerId: 'w', limit: 10, orderingHoldSeconds: 0 });
    expect(claimed!.events.map((c) => [c.event_id, (c.payload as { event_id: string }).event_id])).toEqual([
      ['evt_old_5', 'evt_old_5'],
      ['evt_old_6', 'evt_old_6'],
    ]);
  });
});
