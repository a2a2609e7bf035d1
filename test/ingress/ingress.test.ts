import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import type { RunningServer } from '../../src/app/server.js';
import { getInboxEvent, getRawBody } from '../../src/inbox/read-queries.js';
import { sign } from '../../src/signature/index.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

const kinds = await availableStoreKinds();

describe.each(kinds)('ingress over HTTP on %s', (kind) => {
  let store: TestStore;
  let server: RunningServer;
  let hook: string;

  beforeAll(async () => {
    store = await openTestStore(kind);
    server = await startReceiver({ db: store.db, env: { POSTROOM_MAX_BODY_BYTES: '4096' } });
    hook = `${server.url}/webhooks`;
  });
  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
  });

  it('stores a signed event with its raw bytes, headers and source, then reports duplicates', async () => {
    const event = makeEvent({ data: { correspondence_id: 'cor_77', participant_id: 'par_1', act: 'approved', ref: 'r' } });
    // Pretty-printed on purpose: the stored bytes must be exactly those received.
    const body = JSON.stringify(event, null, 2);
    const first = await postEvent(hook, event, { secret: TEST_SECRET, body });
    expect(first).toMatchObject({ status: 200, body: { status: 'accepted' } });
    const again = await postEvent(hook, event, { secret: TEST_SECRET, body });
    expect(again).toMatchObject({ status: 200, body: { status: 'duplicate' } });

    const row = await getInboxEvent(store.db, event.event_id);
    expect(row).toMatchObject({
      event_id: event.event_id,
      type: 'participant.acted',
      status: 'received',
      source: 'webhook',
      correspondence_id: 'cor_77',
      secret_index: 0,
      attempts: 0,
    });
    expect(row!.payload).toEqual(event);
    expect(new Date(row!.occurred_at!).toISOString()).toBe(event.at);
    expect(row!.headers).toMatchObject({ 'x-service-event-id': event.event_id, 'content-type': 'application/json' });
    expect((await getRawBody(store.db, event.event_id))!.toString('utf8')).toBe(body);
  });

  it('refuses bad signatures with 401 and a stable code, storing nothing', async () => {
    const event = makeEvent();
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-service-signature': '' }, 'missing_header'],
      [{ 'x-service-signature': 'garbage' }, 'malformed_header'],
      [
        {
          'x-service-signature': sign({ secret: TEST_SECRET, body: JSON.stringify(event), timestamp: Math.floor(Date.now() / 1000) - 301 }),
        },
        'timestamp_outside_window',
      ],
      [{ 'x-service-signature': sign({ secret: 'whsec_wrong', body: JSON.stringify(event) }) }, 'no_matching_signature'],
    ];
    for (const [headers, code] of cases) {
      const res = await postEvent(hook, event, { secret: TEST_SECRET, headers });
      expect(res.status).toBe(401);
      expect(res.body.error?.code).toBe(code);
      expect(res.body.error?.message).not.toMatch(/whsec|secret|byte/i);
    }
    expect(await getInboxEvent(store.db, event.event_id)).toBeUndefined();
  });

  it('refuses a delivery whose event id or type header differs from the signed body', async () => {
    const event = makeEvent();
    const wrongId = await postEvent(hook, event, { secret: TEST_SECRET, headers: { 'x-service-event-id': 'evt_other' } });
    expect(wrongId).toMatchObject({ status: 400, body: { error: { code: 'event_id_mismatch' } } });
    const wrongType = await postEvent(hook, event, { secret: TEST_SECRET, headers: { 'x-service-event-type': 'claim.claimed' } });
    expect(wrongType).toMatchObject({ status: 400, body: { error: { code: 'type_mismatch' } } });
    expect(await getInboxEvent(store.db, event.event_id)).toBeUndefined();
  });

  it('quarantines a verified body that is not a valid envelope, keeping bytes and reason', async () => {
    const notJson = Buffer.from('{"event_id": "evt_broken", this is not json');
    const res = await postEvent(hook, null, { secret: TEST_SECRET, body: notJson });
    expect(res).toMatchObject({ status: 200, body: { status: 'quarantined' } });
    const again = await postEvent(hook, null, { secret: TEST_SECRET, body: notJson });
    expect(again).toMatchObject({ status: 200, body: { status: 'duplicate' } });

    const noAt = makeEvent({ event_id: `evt_noat_${Date.now()}` }) as Partial<ReturnType<typeof makeEvent>>;
    delete noAt.at;
    const res2 = await postEvent(hook, null, { secret: TEST_SECRET, body: JSON.stringify(noAt) });
    expect(res2.body.status).toBe('quarantined');
    const row = await getInboxEvent(store.db, noAt.event_id!);
    expect(row).toMatchObject({ status: 'quarantined', type: 'participant.acted' });
    expect(row!.last_error).toMatch(/at must be/);

    const nul = makeEvent({ data: { correspondence_id: 'cor_1', note: 'a\u0000b' } });
    const res3 = await postEvent(hook, nul, { secret: TEST_SECRET });
    expect(res3.body.status).toBe('quarantined');
    const nulRow = await getInboxEvent(store.db, nul.event_id);
    expect(nulRow).toMatchObject({ status: 'quarantined', payload: null });
    expect((await getRawBody(store.db, nul.event_id))!.toString('utf8')).toBe(JSON.stringify(nul));
  });

  it.each([
    ['a date that does not exist', { at: '2026-02-30T00:00:00Z' }],
    ['year 0000', { at: '0000-01-01T00:00:00Z' }],
    ['an offset Postgres refuses', { at: '2026-01-01T10:00:00+16:00' }],
    ['a lone surrogate', { data: { correspondence_id: 'cor_1', note: '\ud800' } }],
    ['a number that overflows numeric', { data: { correspondence_id: 'cor_1', n: 1 } }, '1e1000000'],
    ['a number with too many decimals', { data: { correspondence_id: 'cor_1', n: 1 } }, '1e-20000'],
  ])('answers "quarantined" to a signed body with %s, and stores it as such', async (_name, overrides, number?: string) => {
    const event = makeEvent(overrides as Partial<ReturnType<typeof makeEvent>>);
    let body = JSON.stringify(event);
    if (number) body = body.replace('"n":1', `"n":${number}`);
    const res = await postEvent(hook, event, { secret: TEST_SECRET, body });
    const row = await getInboxEvent(store.db, event.event_id);
    expect(row?.status).toBe('quarantined');
    expect(res).toMatchObject({ status: 200, body: { status: 'quarantined' } });
    expect((await getRawBody(store.db, event.event_id))!.toString('utf8')).toBe(body);
  });

  it('answers "quarantined" when the store refuses a row the envelope check passed, and keeps its bytes', async () => {
    // A refusal no check predicts: a constraint the store enforces on received rows only.
    await store.db.exec(`ALTER TABLE inbox ADD CONSTRAINT test_refuses CHECK (status <> 'received' OR event_id NOT LIKE 'evt_refused_%')`);
    try {
      const refused = makeEvent({ event_id: 'evt_refused_1' });
      const fine = makeEvent();
      // Concurrent, so the refused row can share a flush with a good one: only it is quarantined.
      const [res, other] = await Promise.all([
        postEvent(hook, refused, { secret: TEST_SECRET }),
        postEvent(hook, fine, { secret: TEST_SECRET }),
      ]);
      expect(res).toMatchObject({ status: 200, body: { status: 'quarantined' } });
      expect(other).toMatchObject({ status: 200, body: { status: 'accepted' } });
      const row = await getInboxEvent(store.db, refused.event_id);
      expect(row).toMatchObject({ status: 'quarantined', last_error: expect.stringMatching(/store refused the event/) });
      expect((await getRawBody(store.db, refused.event_id))!.toString('utf8')).toBe(JSON.stringify(refused));
      expect((await getInboxEvent(store.db, fine.event_id))?.status).toBe('received');
      expect(await postEvent(hook, refused, { secret: TEST_SECRET })).toMatchObject({ status: 200, body: { status: 'duplicate' } });
    } finally {
      await store.db.exec('ALTER TABLE inbox DROP CONSTRAINT test_refuses');
    }
  });

  it('treats unknown event types as ordinary events', async () => {
    const event = makeEvent({ type: 'future.event_kind', data: { anything: 1 } });
    expect((await postEvent(hook, event, { secret: TEST_SECRET })).body.status).toBe('accepted');
    expect(await getInboxEvent(store.db, event.event_id)).toMatchObject({ status: 'received', type: 'future.event_kind' });
  });

  it('accepts a body exactly at the limit and answers 413 over it', async () => {
    const base = makeEvent({ data: { correspondence_id: 'cor_1', pad: '' } });
    const padTo = (n: number): string => {
      const probe = JSON.stringify(base);
      (base.data as { pad: string }).pad = 'x'.repeat(n - probe.length);
      return JSON.stringify(base);
    };
    const atLimit = padTo(4096);
    expect(Buffer.byteLength(atLimit)).toBe(4096);
    expect((await postEvent(hook, base, { secret: TEST_SECRET, body: atLimit })).status).toBe(200);
    const over = makeEvent({ data: { pad: 'y'.repeat(4100) } });
    const res = await postEvent(hook, over, { secret: TEST_SECRET });
    expect(res).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
    expect(await getInboxEvent(store.db, over.event_id)).toBeUndefined();
  });

  it('stores the same event posted 50 times concurrently once, and every copy gets a 2xx', async () => {
    const event = makeEvent();
    const body = JSON.stringify(event);
    const results = await Promise.all(Array.from({ length: 50 }, () => postEvent(hook, event, { secret: TEST_SECRET, body })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.filter((r) => r.body.status === 'accepted')).toHaveLength(1);
    expect(results.filter((r) => r.body.status === 'duplicate')).toHaveLength(49);
    const count = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = $1', [event.event_id]);
    expect(count.rows[0]!.n).toBe(1);
  });

  it('stores many distinct concurrent events, each exactly once', async () => {
    const events = Array.from({ length: 200 }, () => makeEvent());
    const results = await Promise.all(events.map((e) => postEvent(hook, e, { secret: TEST_SECRET })));
    expect(results.map((r) => r.body.status)).toEqual(events.map(() => 'accepted'));
    const count = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE event_id = ANY($1::text[])', [
      events.map((e) => e.event_id),
    ]);
    expect(count.rows[0]!.n).toBe(200);
  });

  it('answers 404 elsewhere, 405 for other methods on the webhook path, and serves probes', async () => {
    expect((await request(`${server.url}/nope`)).statusCode).toBe(404);
    const get = await request(hook);
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('POST');
    await get.body.dump();
    expect((await request(`${server.url}/healthz`)).statusCode).toBe(200);
    const ready = await request(`${server.url}/readyz`);
    expect(ready.statusCode).toBe(200);
    expect(await ready.body.json()).toMatchObject({ status: 'ready' });
  });
});
