import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyIn } from '../../src/db/copy-in.js';
import { createPgDb } from '../../src/db/pg.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { encodeCopyRows, timestampMicros } from '../../src/inbox/copy-rows.js';
import { createCopyChoice, insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { INBOX_CHANNEL, type NewInboxEvent } from '../../src/inbox/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { envelope, toRow } from '../worker/support.js';

/*
 * Ingress flushes go in by binary COPY (src/inbox/copy-rows.ts) where the store is
 * Postgres. What they store must be exactly what the INSERT statement stores for
 * the same events, every column; Postgres is the judge of every conversion.
 */
const onPostgres = (await availableStoreKinds()).includes('postgres');

/** The store, with a count of the COPYs that went through it: to know which path wrote. */
function counting(db: Db): Queryable & { copies: number } {
  const q = {
    copies: 0,
    query: db.query.bind(db),
    exec: db.exec.bind(db),
    copyIn: async (sql: string, data: Buffer) => {
      const rows = await db.copyIn!(sql, data);
      q.copies++;
      return rows;
    },
  };
  return q;
}

const noNul = (s: string) => !s.includes('\u0000');
const text = fc.string({ unit: 'grapheme', maxLength: 40 }).filter(noNul);
const pad = (n: number, w: number) => String(n).padStart(w, '0');

/** Timestamps in the strict form the envelope accepts, in and out of the range COPY converts itself. */
const timestampOf = (years: fc.Arbitrary<number>, fractions: fc.Arbitrary<string>) =>
  fc
    .record({
      year: years,
      month: fc.integer({ min: 1, max: 12 }),
      day: fc.integer({ min: 1, max: 31 }),
      hour: fc.integer({ min: 0, max: 23 }),
      minute: fc.integer({ min: 0, max: 59 }),
      second: fc.integer({ min: 0, max: 59 }),
      fraction: fc.option(fractions, { nil: undefined }),
      zone: fc.oneof(
        fc.constant('Z'),
        fc.record({ sign: fc.constantFrom('+', '-'), h: fc.integer({ min: 0, max: 15 }), m: fc.integer({ min: 0, max: 59 }) }),
      ),
    })
    .map(({ year, month, day, hour, minute, second, fraction, zone }) => {
      const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
      const last = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
      const z = typeof zone === 'string' ? zone : `${zone.sign}${pad(zone.h, 2)}:${pad(zone.m, 2)}`;
      return `${pad(year, 4)}-${pad(month, 2)}-${pad(Math.min(day, last), 2)}T${pad(hour, 2)}:${pad(minute, 2)}:${pad(second, 2)}${fraction === undefined ? '' : `.${fraction}`}${z}`;
    });
/** What COPY converts itself: years 1970 to 2199, microseconds at most. */
const convertible = timestampOf(fc.integer({ min: 1970, max: 2199 }), fc.stringMatching(/^[0-9]{1,6}$/));
/** Any year the envelope accepts, and fractions Postgres must round. */
const timestamp = fc.oneof(convertible, timestampOf(fc.integer({ min: 1, max: 9999 }), fc.stringMatching(/^[0-9]{1,9}$/)));

const event = (id: string, at: fc.Arbitrary<string>): fc.Arbitrary<NewInboxEvent> =>
  fc
    .record({
      type: fc.oneof(
        fc.constant('participant.acted'),
        text.filter((s) => s.length > 0),
      ),
      occurredAt: fc.option(at, { nil: null }),
      rawBody: fc.uint8Array({ maxLength: 2000 }),
      signatureHeader: fc.option(text, { nil: null }),
      headers: fc.oneof(
        fc.constant(null),
        fc.record({ contentType: fc.option(text, { nil: undefined }), userAgent: fc.option(text, { nil: undefined }) }),
        fc.dictionary(text, text, { maxKeys: 4 }),
      ),
      endpointId: fc.option(text, { nil: null }),
      correspondenceId: fc.option(text, { nil: null }),
      secretIndex: fc.option(fc.integer({ min: -32768, max: 32767 }), { nil: null }),
    })
    .map(({ type, headers, ...rest }) => {
      let kept: Record<string, string> | null;
      if (headers === null || !('contentType' in headers || 'userAgent' in headers)) {
        kept = headers as Record<string, string> | null;
      } else {
        // The usual set (src/inbox/insert-queries.ts, usualHeaders): kept in two columns, or, with neither, as JSON.
        kept = { 'x-service-event-id': id, 'x-service-event-type': type };
        if (headers.contentType !== undefined) kept['content-type'] = headers.contentType;
        if (headers.userAgent !== undefined) kept['user-agent'] = headers.userAgent;
      }
      return {
        eventId: id,
        type,
        payloadJson: null,
        rawBody: Buffer.from(rest.rawBody),
        headers: kept,
        source: 'webhook' as const,
        status: 'received' as const,
        lastError: null,
        occurredAt: rest.occurredAt,
        signatureHeader: rest.signatureHeader,
        endpointId: rest.endpointId,
        correspondenceId: rest.correspondenceId,
        secretIndex: rest.secretIndex,
      };
    });

/** Most batches with timestamps COPY converts, some with any: those must go in by the statement. */
const batch = (run: number) =>
  fc
    .tuple(
      fc.uniqueArray(
        text.filter((s) => s.length > 0),
        { minLength: 1, maxLength: 12 },
      ),
      fc.boolean(),
    )
    .chain(([ids, any]) => fc.tuple(...ids.map((id) => event(`evt_${run}_${id}`, any ? timestamp : convertible))));

/** A received event as ingress writes it (inboxRowFromEnvelope: the signed bytes kept), with overrides. */
function received(id: string, overrides: Partial<NewInboxEvent> = {}): NewInboxEvent {
  return { ...toRow(envelope('participant.acted', { correspondence_id: 'cor_1' }, '2026-11-29T10:00:00Z', id)), ...overrides };
}

const EVERY_COLUMN = `SELECT event_id, type, occurred_at, payload, raw_body, signature_header, headers, delivery_content_type,
  delivery_user_agent, endpoint_id, source, correspondence_id, secret_index, status, attempts, last_error, processed_at,
  (received_at = next_attempt_at) AS due_on_receipt
  FROM inbox WHERE event_id = ANY($1::text[]) ORDER BY event_id`;

describe.runIf(onPostgres)('inbox rows by binary COPY', () => {
  let copied: TestStore;
  let inserted: TestStore;
  beforeAll(async () => {
    [copied, inserted] = await Promise.all([openTestStore('postgres'), openTestStore('postgres')]);
  });
  afterAll(async () => {
    await Promise.all([copied?.cleanup(), inserted?.cleanup()]);
  });

  it('stores every column exactly as the INSERT statement stores it, whatever the text, bytes, headers and timestamps', async () => {
    const store = counting(copied.db);
    let run = 0;
    let copies = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constant(null).chain(() => batch(++run)),
        async (events) => {
          const before = store.copies;
          const a = await insertInboxBatch(store, events, createCopyChoice());
          const b = await insertInboxBatch(inserted.db, events);
          expect(a).toEqual(b);
          const ids = events.map((e) => e.eventId);
          const [x, y] = await Promise.all([copied.db.query(EVERY_COLUMN, [ids]), inserted.db.query(EVERY_COLUMN, [ids])]);
          expect(x.rows).toEqual(y.rows);
          expect(x.rows).toHaveLength(events.length);
          // Which path wrote: COPY exactly when every timestamp is one it converts itself.
          const convertible = events.every((e) => e.occurredAt === null || timestampMicros(e.occurredAt) !== undefined);
          expect(store.copies - before).toBe(convertible ? 1 : 0);
          if (convertible) copies++;
        },
      ),
      { numRuns: 150 },
    );
    expect(copies).toBeGreaterThan(50);
  });

  it('converts a timestamp to the very microsecond Postgres reads from its text, and leaves the rest to Postgres', async () => {
    const samples = fc.sample(timestamp, 3000);
    samples.push('1970-01-01T00:00:00Z', '1999-12-31T23:59:59.999999Z', '2000-01-01T00:00:00+15:59', '2199-12-31T23:59:59.999999-15:59');
    const res = await copied.db.query<{ at: string; micros: string }>(
      `SELECT at, ((extract(epoch FROM at::timestamptz) - 946684800) * 1000000)::bigint::text AS micros FROM unnest($1::text[]) AS at`,
      [samples],
    );
    let converted = 0;
    for (const { at, micros } of res.rows) {
      const mine = timestampMicros(at);
      if (mine === undefined) {
        const year = Number(at.slice(0, 4));
        const fraction = /\.(\d+)/.exec(at)?.[1] ?? '';
        expect(year < 1970 || year > 2199 || fraction.length > 6).toBe(true);
        continue;
      }
      converted++;
      expect(String(mine)).toBe(micros);
    }
    expect(converted).toBeGreaterThan(1000);
    for (const bad of [
      '2026-02-30T00:00:00Z',
      '2026-11-29T24:00:00Z',
      '2026-11-29 10:00:00Z',
      '2026-11-29T10:00:00',
      '2026-11-29T10:00:00.Z',
    ]) {
      expect(timestampMicros(bad)).toBeUndefined();
    }
  });

  it('answers an id already stored as not new: the refused COPY writes nothing, the statement writes the rest, and COPY rests', async () => {
    const store = counting(copied.db);
    const choice = createCopyChoice();
    const [a, b, c] = ['a', 'b', 'c'].map((k) => `evt_dup_${k}_${randomUUID()}`);
    const row = (id: string) => received(id);
    expect(await insertInboxBatch(store, [row(a!), row(b!)], choice)).toEqual(new Set([a, b]));
    expect(store.copies).toBe(1);
    expect(await insertInboxBatch(store, [row(b!), row(c!)], choice)).toEqual(new Set([c]));
    expect(store.copies).toBe(1);
    const stored = await copied.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [
      [a, b, c],
    ]);
    expect(stored.rows[0]!.n).toBe(3);
    // After the refusal, the next flushes insert without trying COPY.
    const d = `evt_dup_d_${randomUUID()}`;
    expect(await insertInboxBatch(store, [row(d)], choice)).toEqual(new Set([d]));
    expect(store.copies).toBe(1);
  });

  it('notifies the workers when, and only when, the copied rows commit', async () => {
    const listener = new pg.Client({ connectionString: copied.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.channel));
      await listener.query(`LISTEN ${INBOX_CHANNEL}`);
      const store = counting(copied.db);
      const id = `evt_notify_${randomUUID()}`;
      const row = received(id, { occurredAt: null, signatureHeader: null, correspondenceId: null, secretIndex: null });
      await insertInboxBatch(store, [row], createCopyChoice());
      expect(store.copies).toBe(1);
      for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(heard).toEqual([INBOX_CHANNEL]);
      // A COPY refused for a duplicate sends nothing; nor does the statement that then finds nothing new.
      await expect(
        copied.db.copyIn!(`COPY inbox (event_id, type) FROM STDIN; NOTIFY ${INBOX_CHANNEL}`, Buffer.from(`${id}\tx\n`)),
      ).rejects.toMatchObject({
        code: '23P01',
      });
      await insertInboxBatch(store, [row], createCopyChoice());
      await listener.query('SELECT 1');
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toEqual([INBOX_CHANNEL]);
    } finally {
      await listener.end();
    }
  });

  it('leaves the connection ready for the next statement after a COPY that fails before or while it reads the rows', async () => {
    const client = new pg.Client({ connectionString: copied.url });
    await client.connect();
    try {
      await client.query('SET search_path = postroom');
      const id = `evt_conn_${randomUUID()}`;
      const one = encodeCopyRows([
        {
          eventId: id,
          type: 't',
          occurredAt: null,
          rawBody: Buffer.from('x'),
          signatureHeader: null,
          headersJson: null,
          contentType: null,
          userAgent: null,
          endpointId: null,
          source: 'webhook',
          correspondenceId: null,
          secretIndex: null,
          status: 'received',
        },
      ])!;
      const columns =
        'event_id, type, occurred_at, raw_body, signature_header, headers, delivery_content_type, delivery_user_agent, endpoint_id, source, correspondence_id, secret_index, status';
      // Refused before any row is read: the rows sent with the statement are dropped by Postgres.
      await expect(copyIn(client, `COPY no_such_table (${columns}) FROM STDIN (FORMAT binary)`, one)).rejects.toMatchObject({
        code: '42P01',
      });
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(await copyIn(client, `COPY inbox (${columns}) FROM STDIN (FORMAT binary)`, one)).toBe(1);
      // Refused at a row: nothing of the COPY stays.
      const two = Buffer.concat([one.subarray(0, one.length - 2), one.subarray(19)]);
      await expect(copyIn(client, `COPY inbox (${columns}) FROM STDIN (FORMAT binary)`, two)).rejects.toMatchObject({ code: '23P01' });
      expect((await client.query('SELECT count(*)::int AS n FROM inbox WHERE event_id = $1', [id])).rows).toEqual([{ n: 1 }]);
      // Malformed input (a truncated row): refused, and the connection still answers.
      await expect(
        copyIn(client, `COPY inbox (${columns}) FROM STDIN (FORMAT binary)`, one.subarray(0, one.length - 6)),
      ).rejects.toMatchObject({
        code: '22P04',
      });
      expect((await client.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    } finally {
      await client.end();
    }
  });

  it('refuses to call a batch new when COPY reports fewer rows than it was given (a trigger dropped one)', async () => {
    const store = counting(copied.db);
    const dropped = `evt_dropped_${randomUUID()}`;
    const kept = `evt_kept_${randomUUID()}`;
    await copied.db.exec(`
      CREATE FUNCTION drop_one() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.event_id = '${dropped}' THEN RETURN NULL; END IF; RETURN NEW; END $$;
      CREATE TRIGGER drop_one BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION drop_one()`);
    try {
      const row = (id: string) => received(id, { occurredAt: null });
      await expect(insertInboxBatch(store, [row(dropped), row(kept)], createCopyChoice())).rejects.toMatchObject({
        code: 'inbox_copy_inconsistent',
      });
    } finally {
      await copied.db.exec('DROP TRIGGER drop_one ON inbox; DROP FUNCTION drop_one()');
    }
  });

  it('gives way at once to another transaction holding the same id: the COPY stops waiting and the statement writes the flush', async () => {
    // Another writer has inserted the id and not committed. A COPY that waited for it could be waiting in a
    // cycle (two COPYs of one id each wait for the other); it must give up within its lock timeout instead.
    const holder = new pg.Client({ connectionString: copied.url });
    await holder.connect();
    try {
      const id = `evt_held_${randomUUID()}`;
      await holder.query('BEGIN');
      await holder.query(`INSERT INTO postroom.inbox (event_id, type) VALUES ($1, 'participant.acted')`, [id]);
      const store = counting(copied.db);
      const choice = createCopyChoice();
      const writing = insertInboxBatch(store, [received(id)], choice);
      // Until the holder ends, the statement waits for it, as a writer must; then the id is new to this flush.
      await new Promise((r) => setTimeout(r, 500));
      await holder.query('ROLLBACK');
      expect(await writing).toEqual(new Set([id]));
      expect(store.copies).toBe(0);
      // The COPY was refused, so the next flush inserts.
      expect(choice.use()).toBe(false);
    } finally {
      await holder.end();
    }
  });

  it('two replicas copying overlapping ids at once store each id once and say so, without a deadlock', async () => {
    const replicaA = createPgDb({ url: copied.url!, poolSize: 2, logger: silentLogger(), connectTimeoutMs: 2000 });
    const replicaB = createPgDb({ url: copied.url!, poolSize: 2, logger: silentLogger(), connectTimeoutMs: 2000 });
    try {
      for (let round = 0; round < 60; round++) {
        const ids = Array.from({ length: 40 }, (_, i) => `evt_pair_${round}_${i}_${randomUUID()}`);
        const row = (id: string) => received(id, { occurredAt: '2026-11-29T10:00:00.5+01:00', rawBody: Buffer.from(id) });
        // Each replica gets 30 of the 40, in its own arrival order; 20 are shared.
        const forA = ids.slice(0, 30).reverse().map(row);
        const forB = ids.slice(10).map(row);
        const [a, b] = await Promise.all([
          insertInboxBatch(replicaA, forA, createCopyChoice()),
          insertInboxBatch(replicaB, forB, createCopyChoice()),
        ]);
        for (const id of ids) expect(Number(a.has(id)) + Number(b.has(id))).toBe(1);
        const stored = await copied.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [ids]);
        expect(stored.rows[0]!.n).toBe(40);
      }
    } finally {
      await Promise.all([replicaA.close(), replicaB.close()]);
    }
  });
});

describe('when a flush tries COPY', () => {
  it('tries every flush until a refusal, then rests 8 flushes, twice as long after each refusal in a row, up to 1,024', () => {
    const choice = createCopyChoice();
    const tries = (n: number) => Array.from({ length: n }, () => choice.use()).filter(Boolean).length;
    expect(tries(5)).toBe(5);
    choice.refused();
    expect(tries(8)).toBe(0);
    expect(choice.use()).toBe(true);
    choice.refused();
    expect(tries(16)).toBe(0);
    expect(choice.use()).toBe(true);
    for (let i = 0; i < 12; i++) {
      choice.refused();
      while (!choice.use());
    }
    choice.refused();
    expect(tries(1024)).toBe(0);
    expect(choice.use()).toBe(true);
    choice.wrote();
    choice.refused();
    expect(tries(8)).toBe(0);
    expect(choice.use()).toBe(true);
  });
});
