import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import { preparedName, preparedNameOf } from '../../src/db/prepared.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import type { NewInboxEvent } from '../../src/inbox/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

function row(id: string, overrides: Partial<NewInboxEvent> = {}): NewInboxEvent {
  return {
    eventId: id,
    type: 'participant.acted',
    occurredAt: '2026-11-18T10:15:00.5+01:00',
    payloadJson: null,
    rawBody: Buffer.from(`{"event_id":"${id}"}`),
    signatureHeader: 't=1,v1=00',
    headers: { 'content-type': 'application/json', 'user-agent': 'sender "quoted" \\ back' },
    endpointId: null,
    source: 'webhook',
    correspondenceId: 'cor_1',
    secretIndex: 1,
    status: 'received',
    lastError: null,
    ...overrides,
  };
}

interface Stored {
  event_id: string;
  type: string;
  occurred_at: Date | null;
  payload: unknown;
  raw_body: Uint8Array | null;
  signature_header: string | null;
  headers: unknown;
  endpoint_id: string | null;
  source: string;
  correspondence_id: string | null;
  secret_index: number | null;
  status: string;
  last_error: string | null;
}

describe.each(await availableStoreKinds())('one flush statement for a whole batch, on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.cleanup());

  const read = async (id: string): Promise<Stored> =>
    (
      await store.db.query<Stored>(
        `SELECT event_id, type, occurred_at, payload, raw_body, signature_header, headers, endpoint_id, source,
                correspondence_id, secret_index, status, last_error FROM inbox WHERE event_id = $1`,
        [id],
      )
    ).rows[0]!;

  it('stores every field of every row, each body exactly its own slice of the shared bytes', async () => {
    const binary = Buffer.from([0x00, 0xff, 0x5c, 0x22, 0x7b, 0x0a]);
    const rows = [
      row(`evt_ib_a_${kind}`),
      // No bytes (a reconciler row): payload kept instead, and the next row's slice must not shift.
      row(`evt_ib_b_${kind}`, { rawBody: null, payloadJson: '{"x": [1, 2]}', source: 'reconciler', headers: null, secretIndex: null }),
      row(`evt_ib_c_${kind}`, { rawBody: Buffer.alloc(0) }),
      row(`evt_ib_d_${kind}`, {
        rawBody: binary,
        status: 'quarantined',
        lastError: 'body is not valid JSON: "quoted" {braces}, commas',
        occurredAt: null,
        correspondenceId: null,
        endpointId: 'ep_1',
      }),
      row(`evt_ib_e_${kind}`, { rawBody: Buffer.from('é ünïcode ✓ 😀') }),
    ];
    expect(await insertInboxBatch(store.db, rows)).toEqual(new Set(rows.map((r) => r.eventId)));

    const a = await read(rows[0]!.eventId);
    expect(a).toMatchObject({
      type: 'participant.acted',
      payload: null,
      signature_header: 't=1,v1=00',
      headers: rows[0]!.headers,
      endpoint_id: null,
      source: 'webhook',
      correspondence_id: 'cor_1',
      secret_index: 1,
      status: 'received',
      last_error: null,
    });
    expect(new Date(a.occurred_at!).toISOString()).toBe('2026-11-18T09:15:00.500Z');
    expect(Buffer.from(a.raw_body!).equals(rows[0]!.rawBody!)).toBe(true);
    expect(await read(rows[1]!.eventId)).toMatchObject({ raw_body: null, payload: { x: [1, 2] }, headers: null, secret_index: null });
    expect(Buffer.from((await read(rows[2]!.eventId)).raw_body!).length).toBe(0);
    const d = await read(rows[3]!.eventId);
    expect(Buffer.from(d.raw_body!).equals(binary)).toBe(true);
    expect(d).toMatchObject({ status: 'quarantined', last_error: rows[3]!.lastError, occurred_at: null, endpoint_id: 'ep_1' });
    expect(Buffer.from((await read(rows[4]!.eventId)).raw_body!).toString()).toBe('é ünïcode ✓ 😀');

    // Again, with one new row: only that one is new.
    const again = [...rows, row(`evt_ib_f_${kind}`)];
    expect(await insertInboxBatch(store.db, again)).toEqual(new Set([`evt_ib_f_${kind}`]));
  });

  it('stores a lone surrogate in an id as U+FFFD, as text parameters did, instead of failing the batch', async () => {
    const lone = `evt_ib_lone_${kind}_\ud800`;
    const rows = [row(lone, { status: 'quarantined', lastError: 'a lone \udc00 here' }), row(`evt_ib_next_${kind}`)];
    expect((await insertInboxBatch(store.db, rows)).size).toBe(2);
    const stored = await read(`evt_ib_lone_${kind}_\ufffd`);
    expect(stored.last_error).toBe('a lone \ufffd here');
    // A valid pair is kept as it is.
    await insertInboxBatch(store.db, [row(`evt_ib_pair_${kind}_😀`)]);
    expect((await read(`evt_ib_pair_${kind}_😀`)).event_id).toBe(`evt_ib_pair_${kind}_😀`);
  });
});

describe('named prepared statements', () => {
  it('reads the name from the marker, and refuses a name Postgres would need quoting for', () => {
    expect(preparedNameOf(`${preparedName('postroom_x_v1')}\nSELECT 1`)).toBe('postroom_x_v1');
    expect(preparedNameOf('SELECT 1')).toBeUndefined();
    expect(() => preparedName('Bad-Name')).toThrow(TypeError);
  });
});

describe.skipIf(!(await availableStoreKinds()).includes('postgres'))('the flush on Postgres', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
  });
  afterAll(async () => store?.cleanup());

  it("is prepared once per connection of postroom's own pool, and never on an application's pool", async () => {
    const own = createPgDb({ url: store.url!, poolSize: 1, logger: silentLogger() });
    try {
      await insertInboxBatch(own, [row('evt_named_1')]);
      await insertInboxBatch(own, [row('evt_named_2'), row('evt_named_3')]);
      const prepared = await own.query<{ name: string }>(`SELECT name FROM pg_prepared_statements`);
      expect(prepared.rows.map((r) => r.name)).toEqual(['postroom_inbox_insert_v1']);
    } finally {
      await own.close();
    }

    const pool = new pg.Pool({ connectionString: store.url!, max: 1, options: '-c search_path=postroom' });
    const embedded = createPgDb({ pool, logger: silentLogger() });
    try {
      await insertInboxBatch(embedded, [row('evt_named_4')]);
      expect((await pool.query(`SELECT count(*)::int AS n FROM pg_prepared_statements`)).rows[0].n).toBe(0);
    } finally {
      await pool.end();
    }
  });
});
