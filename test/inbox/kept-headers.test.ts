import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import type { NewInboxEvent } from '../../src/inbox/types.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

/**
 * The usual delivery headers (content type, user agent, and the event id and type that ingress checked
 * against the body) are kept as two narrow columns and built back by the reader; every other set is kept
 * as JSON. Either way each row must read back exactly its own headers.
 */
describe.each(await availableStoreKinds())('the delivery headers kept with each row, on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => store?.cleanup());

  let seq = 0;
  function row(headers: Record<string, string> | null, overrides: Partial<NewInboxEvent> = {}): NewInboxEvent {
    seq++;
    const env = {
      event_id: `evt_hdr_${kind}_${seq}`,
      type: 'participant.acted',
      at: '2026-11-25T10:00:00Z',
      data: { correspondence_id: 'cor_h' },
    };
    return { ...inboxRowFromEnvelope(env, 'webhook'), headers, ...overrides };
  }
  const usual = (e: { eventId: string; type: string }, contentType: string, userAgent: string): Record<string, string> => ({
    'content-type': contentType,
    'user-agent': userAgent,
    'x-service-event-id': e.eventId,
    'x-service-event-type': e.type,
  });

  async function storedHeaders(ids: string[]): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for (const id of ids) out.set(id, (await getInboxEvent(store.db, id))?.headers);
    return out;
  }
  /** Whether a row keeps its headers as JSON (the narrow columns hold nothing then). */
  async function keptAsJson(id: string): Promise<boolean> {
    const res = await store.db.query<{ json: boolean; narrow: boolean }>(
      'SELECT headers IS NOT NULL AS json, delivery_content_type IS NOT NULL AS narrow FROM inbox WHERE event_id = $1',
      [id],
    );
    const r = res.rows[0]!;
    expect(r.json && r.narrow).toBe(false);
    return r.json;
  }

  it('keeps each row its own headers in a flush that mixes shared pairs, other sets and none', async () => {
    const rows: NewInboxEvent[] = [];
    const add = (make: (r: NewInboxEvent) => Record<string, string> | null, overrides: Partial<NewInboxEvent> = {}) => {
      const r = row(null, overrides);
      r.headers = make(r);
      rows.push(r);
    };
    add((r) => usual(r, 'application/json', 'CDS-Webhooks/2.0'));
    add((r) => usual(r, 'application/json', 'CDS-Webhooks/2.1'));
    add((r) => usual(r, 'application/json', 'CDS-Webhooks/2.0'));
    add((r) => usual(r, 'application/json; charset=utf-8', 'say "hi" \\ ünïcödé ☃'));
    // Not the usual set: sent as JSON, kept as given.
    add((r) => ({ 'content-type': 'application/json', 'x-service-event-id': r.eventId }));
    add((r) => ({ ...usual(r, 'application/json', 'ua'), 'x-service-event-id': 'evt_someone_else' }));
    add((r) => ({ ...usual(r, 'application/json', 'ua'), 'x-service-event-type': 'claim.claimed' }));
    add((r) => ({ ...usual(r, 'application/json', 'ua'), extra: 'kept too' }));
    add(() => ({}));
    add(() => null);
    add((r) => usual(r, '', ''));
    // Either of content type and user agent may be missing (the spec promises neither), not both.
    add((r) => ({ 'content-type': 'application/json', 'x-service-event-id': r.eventId, 'x-service-event-type': r.type }));
    add((r) => ({ 'user-agent': 'ua/1', 'x-service-event-id': r.eventId, 'x-service-event-type': r.type }));
    add((r) => ({ 'x-service-event-id': r.eventId, 'x-service-event-type': r.type }));

    const inserted = await insertInboxBatch(store.db, rows);
    expect(inserted.size).toBe(rows.length);
    const stored = await storedHeaders(rows.map((r) => r.eventId));
    for (const r of rows) expect(stored.get(r.eventId), r.eventId).toEqual(r.headers);
    // The usual sets cost no JSON; the others keep theirs, and a row without headers none.
    const json = await Promise.all(rows.map((r) => keptAsJson(r.eventId)));
    expect(json).toEqual([false, false, false, false, true, true, true, true, true, false, false, false, false, true]);
  });

  it('keeps any header values byte for byte, whichever way they travel', async () => {
    // Header values as Node gives them: latin1-decoded, no NUL, CR or LF; and whatever a library caller passes.
    const value = fc
      .string({ unit: 'binary', maxLength: 40 })
      .filter((v) => ![...v].some((c) => c === '\u0000' || c === '\r' || c === '\n' || (c >= '\ud800' && c <= '\udfff')));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ contentType: fc.option(value, { nil: undefined }), userAgent: value, usual: fc.boolean() }), {
          minLength: 1,
          maxLength: 12,
        }),
        async (specs) => {
          const rows = specs.map((s) => {
            const r = row(null);
            const common: Record<string, string> = { 'user-agent': s.userAgent, 'x-service-event-id': r.eventId };
            if (s.contentType !== undefined) common['content-type'] = s.contentType;
            r.headers = s.usual ? { ...common, 'x-service-event-type': r.type } : common;
            return r;
          });
          await insertInboxBatch(store.db, rows);
          const stored = await storedHeaders(rows.map((r) => r.eventId));
          for (const r of rows) expect(stored.get(r.eventId)).toEqual(r.headers);
        },
      ),
      { numRuns: 25 },
    );
  });
});
