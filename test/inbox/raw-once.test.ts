import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { claimBatch } from '../../src/worker/claim-queries.js';
import { getReplayCandidate } from '../../src/inbox/admin-queries.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

describe.each(await availableStoreKinds())('the signed bytes, stored once, on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.cleanup());

  it('keeps the body as raw bytes only, and every reader still gets the parsed payload', async () => {
    const env = {
      event_id: `evt_raw_${kind}`,
      type: 'participant.acted',
      at: '2026-11-18T10:15:00.123Z',
      data: { correspondence_id: 'cor_raw', participant_id: 'par_1', act: 'read', ref: 'emp-1', n: 1.5 },
    };
    const row = inboxRowFromEnvelope(env, 'webhook');
    expect(await insertInboxBatch(store.db, [row])).toEqual(new Set([env.event_id]));
    const stored = await store.db.query<{ payload: unknown; raw_body: Uint8Array }>(
      'SELECT payload, raw_body FROM inbox WHERE event_id = $1',
      [env.event_id],
    );
    expect(stored.rows[0]!.payload).toBeNull();
    expect(Buffer.from(stored.rows[0]!.raw_body).equals(row.rawBody!)).toBe(true);

    expect((await getInboxEvent(store.db, env.event_id))!.payload).toEqual(env);
    await store.db.query(`UPDATE inbox SET status = 'dead' WHERE event_id = $1`, [env.event_id]);
    expect((await getReplayCandidate(store.db, env.event_id))!.payload).toEqual(env);
    await store.db.query(`UPDATE inbox SET status = 'received' WHERE event_id = $1`, [env.event_id]);
    const claimed = await claimBatch(store.db, { workerId: 'w1', limit: 10, orderingHoldSeconds: 0 });
    expect(claimed!.events.map((c) => c.payload)).toEqual([env]);
  });

  it('still reads payload where an older row kept it, and a row written without bytes keeps its payload', async () => {
    const env = {
      event_id: `evt_nobytes_${kind}`,
      type: 'participant.acted',
      at: '2026-11-18T10:15:00Z',
      data: { correspondence_id: 'cor_nb' },
    };
    await insertInboxBatch(store.db, [{ ...inboxRowFromEnvelope(env, 'reconciler'), rawBody: null }]);
    const stored = await store.db.query<{ payload: unknown; raw_body: Uint8Array | null }>(
      'SELECT payload, raw_body FROM inbox WHERE event_id = $1',
      [env.event_id],
    );
    expect(stored.rows[0]).toEqual({ payload: env, raw_body: null });
    const claimed = await claimBatch(store.db, { workerId: 'w2', limit: 10, orderingHoldSeconds: 0 });
    expect(claimed!.events.map((c) => c.payload)).toEqual([env]);
  });

  it('stores every body of a batch byte for byte, whatever the bytes and however they mix with rows without any', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.uint8Array({ maxLength: 3000 }), { nil: null }), { minLength: 1, maxLength: 40 }),
        async (bodies) => {
          run++;
          const rows = bodies.map((body, i) => ({
            ...inboxRowFromEnvelope(
              { event_id: `evt_bytes_${kind}_${run}_${i}`, type: 'participant.acted', at: '2026-11-18T10:15:00Z', data: {} },
              'webhook',
            ),
            rawBody: body === null ? null : Buffer.from(body),
          }));
          await insertInboxBatch(store.db, rows);
          const stored = await store.db.query<{ event_id: string; raw_body: Uint8Array | null }>(
            'SELECT event_id, raw_body FROM inbox WHERE event_id = ANY($1::text[])',
            [rows.map((r) => r.eventId)],
          );
          const byId = new Map(stored.rows.map((r) => [r.event_id, r.raw_body === null ? null : Buffer.from(r.raw_body)]));
          expect(byId.size).toBe(rows.length);
          for (const r of rows) expect(byId.get(r.eventId)).toEqual(r.rawBody);
        },
      ),
      { numRuns: 40 },
    );
  });
});
