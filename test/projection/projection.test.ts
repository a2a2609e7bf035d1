import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyKnownEvent } from '../../src/events/catalogue.js';
import { validateEvent } from '../../src/events/validate.js';
import type { Queryable } from '../../src/db/types.js';
import { applyToProjection } from '../../src/projection/apply.js';
import { getProjectedCorrespondence, listOpenCorrespondenceIds } from '../../src/projection/read.js';
import { STATE_RANK } from '../../src/projection/rules.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

function known(type: string, at: string, eventId: string, data: Record<string, unknown>): AnyKnownEvent {
  const v = validateEvent({ event_id: eventId, type, payload: { event_id: eventId, type, at, data } });
  if (v.kind !== 'known') throw new Error(`test event invalid: ${JSON.stringify(v)}`);
  return v.event;
}

async function apply(
  db: { transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> },
  events: AnyKnownEvent[],
  fromReread: ReadonlySet<string> = new Set(),
): Promise<void> {
  await db.transaction((tx) => applyToProjection(tx, events, fromReread));
}

/** Both projection tables for one correspondence, minus bookkeeping that legitimately differs. */
async function snapshot(q: Queryable, correspondenceId: string): Promise<unknown> {
  const c = await q.query(
    `SELECT status, status_rank, status_at, status_event_id, kind, subject, created_at, document_ids,
            summary_delivered, summary_held, summary_undeliverable, summary_total, summary_at, summary_event_id,
            last_event_id, last_event_type, last_event_at
     FROM correspondence_projection WHERE correspondence_id = $1`,
    [correspondenceId],
  );
  const p = await q.query(
    `SELECT participant_id, ref, state, state_rank, state_at, state_event_id, last_act, last_act_at, last_act_reread, last_act_event_id
     FROM participant_projection WHERE correspondence_id = $1 ORDER BY participant_id`,
    [correspondenceId],
  );
  return { correspondence: c.rows, participants: p.rows };
}

describe.each(kinds)('correspondence projection (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it("carries every field the service shows: content_type, documents given at creation, the resource's created_at, refs learned from claims", async () => {
    const c = 'cor_fields';
    await apply(store.db, [
      known('claim.expired', '2026-01-01T10:05:00Z', 'f3', { claim_id: 'clm_1', correspondence_id: c, participant_id: 'p2', ref: 'emp-2' }),
      known('correspondence.created', '2026-01-01T10:00:00.001Z', 'f1', {
        correspondence_id: c,
        kind: 'letter',
        subject: 'Payslip',
        content_type: 'application/pdf',
        status: 'live',
        document_ids: ['doc_b', 'doc_a', 'doc_b'],
        created_at: '2026-01-01T10:00:00.000Z',
        participants: [{ participant_id: 'p1', ref: 'emp-1', state: 'delivered' }],
      }),
      known('document.attached', '2026-01-01T10:01:00Z', 'f2', { correspondence_id: c, document_id: 'doc_c' }),
      known('claim.claimed', '2026-01-01T10:06:00Z', 'f4', { claim_id: 'clm_2', correspondence_id: c, participant_id: 'p3', ref: 'emp-3' }),
    ]);
    const got = await getProjectedCorrespondence(store.db, c);
    expect(got).toMatchObject({
      content_type: 'application/pdf',
      created_at: '2026-01-01T10:00:00.000Z',
      document_ids: ['doc_a', 'doc_b', 'doc_c'],
      participants: [
        { participant_id: 'p1', ref: 'emp-1', state: 'delivered' },
        { participant_id: 'p2', ref: 'emp-2', state: 'undeliverable' },
        { participant_id: 'p3', ref: 'emp-3', state: 'pending' },
      ],
    });
    // A created event whose created_at Postgres cannot hold falls back to its own time instead of failing the batch.
    await apply(store.db, [
      known('correspondence.created', '2026-01-02T00:00:00Z', 'g1', {
        correspondence_id: 'cor_badtime',
        created_at: 'not a time',
        participants: [],
      }),
    ]);
    expect((await getProjectedCorrespondence(store.db, 'cor_badtime'))?.created_at).toBe('2026-01-02T00:00:00.000Z');
  });

  it('builds the read model docs/events.md describes from a created snapshot and later events', async () => {
    const c = 'cor_basic';
    await apply(store.db, [
      known('correspondence.created', '2026-01-01T10:00:00Z', 'e1', {
        correspondence_id: c,
        kind: 'letter',
        subject: 'Payslip',
        status: 'live',
        participants: [
          { participant_id: 'p1', ref: 'emp-1', state: 'pending' },
          { participant_id: 'p2', ref: 'emp-2', state: 'held' },
          { participant_id: 'p3', ref: 'emp-3', state: 'undeliverable' },
        ],
      }),
      known('document.attached', '2026-01-01T10:01:00Z', 'e2', { correspondence_id: c, document_id: 'doc_b' }),
      known('document.attached', '2026-01-01T10:02:00Z', 'e3', { correspondence_id: c, document_id: 'doc_a' }),
      known('participant.acted', '2026-01-01T10:03:00Z', 'e4', { correspondence_id: c, participant_id: 'p1', act: 'read', ref: 'emp-1' }),
      known('correspondence.send_completed', '2026-01-01T10:04:00Z', 'e5', {
        correspondence_id: c,
        delivered: 1,
        held: 1,
        undeliverable: 1,
        total: 3,
      }),
    ]);
    const got = await getProjectedCorrespondence(store.db, c);
    expect(got).toMatchObject({
      correspondence_id: c,
      status: 'live',
      kind: 'letter',
      subject: 'Payslip',
      created_at: '2026-01-01T10:00:00.000Z',
      document_ids: ['doc_a', 'doc_b'],
      send_summary: { delivered: 1, held: 1, undeliverable: 1, total: 3 },
      last_event: { event_id: 'e5', type: 'correspondence.send_completed', at: '2026-01-01T10:04:00.000Z' },
      participants: [
        { participant_id: 'p1', ref: 'emp-1', state: 'delivered', last_act: 'read', last_act_at: '2026-01-01T10:03:00.000Z' },
        { participant_id: 'p2', ref: 'emp-2', state: 'held', last_act: null, last_act_at: null },
        { participant_id: 'p3', ref: 'emp-3', state: 'undeliverable', last_act: null, last_act_at: null },
      ],
    });
    expect(await listOpenCorrespondenceIds(store.db, { limit: 100 })).toContain(c);
  });

  it('never moves a participant or the lifecycle backwards when events arrive out of order', async () => {
    const c = 'cor_backwards';
    await apply(store.db, [
      known('participant.acted', '2026-01-01T10:05:00Z', 'b3', { correspondence_id: c, participant_id: 'p1', act: 'signed', ref: 'r' }),
    ]);
    // Only a participant event seen so far: the lifecycle is unknown, not invented.
    expect((await getProjectedCorrespondence(store.db, c))?.status).toBeNull();
    await apply(store.db, [known('correspondence.sealed', '2026-01-01T10:06:00Z', 'b4', { correspondence_id: c })]);
    // The older snapshot says pending and live; neither may undo delivered and sealed.
    await apply(store.db, [
      known('correspondence.created', '2026-01-01T10:00:00Z', 'b1', {
        correspondence_id: c,
        status: 'live',
        participants: [{ participant_id: 'p1', ref: 'r', state: 'pending' }],
      }),
    ]);
    // An older act applied later does not replace the latest one.
    await apply(store.db, [
      known('participant.acted', '2026-01-01T10:01:00Z', 'b2', { correspondence_id: c, participant_id: 'p1', act: 'read', ref: 'r' }),
    ]);
    const got = await getProjectedCorrespondence(store.db, c);
    expect(got?.status).toBe('sealed');
    expect(got?.participants).toEqual([
      { participant_id: 'p1', ref: 'r', state: 'delivered', last_act: 'signed', last_act_at: '2026-01-01T10:05:00.000Z' },
    ]);
    expect(got?.last_event.event_id).toBe('b4');
    expect(await listOpenCorrespondenceIds(store.db, { limit: 1000 })).not.toContain(c);
  });

  it('lets delivered and undeliverable never replace each other: the earlier event stands, in any order', async () => {
    for (const [c, order] of [
      ['cor_tie_1', [0, 1]],
      ['cor_tie_2', [1, 0]],
    ] as const) {
      const events = [
        known('correspondence.created', '2026-01-01T10:00:00Z', 't1', {
          correspondence_id: c,
          participants: [{ participant_id: 'p', ref: 'r', state: 'undeliverable' }],
        }),
        known('participant.acted', '2026-01-01T10:01:00Z', 't2', { correspondence_id: c, participant_id: 'p', act: 'delivered', ref: 'r' }),
      ];
      for (const i of order) await apply(store.db, [events[i]!]);
      const got = await getProjectedCorrespondence(store.db, c);
      expect(got?.participants[0]?.state).toBe('undeliverable');
      expect(got?.participants[0]?.last_act).toBe('delivered');
      expect(got?.status).toBe('created');
    }
  });

  it('lets an act the reconciler re-read win a tie of instants with a delivered one, whatever the ids, in any order or batching', async () => {
    const T = '2026-01-01T10:05:00.123Z';
    // The delivered act's id sorts after the re-read's, so an id tie-break alone would keep it.
    const delivered = known('participant.acted', T, 'zz_delivered', {
      correspondence_id: 'cor_x',
      participant_id: 'p',
      act: 'consent_declined',
      ref: 'r',
    });
    const reread = known('participant.acted', T, 'rec_0001', { correspondence_id: 'cor_x', participant_id: 'p', act: 'signed', ref: 'r' });
    const later = known('participant.acted', '2026-01-01T10:05:00.124Z', 'aa_later', {
      correspondence_id: 'cor_x',
      participant_id: 'p',
      act: 'read',
      ref: 'r',
    });
    const withCid = (e: AnyKnownEvent, c: string): AnyKnownEvent => ({ ...e, data: { ...e.data, correspondence_id: c } }) as AnyKnownEvent;
    const fromReread = new Set(['rec_0001']);
    for (const [i, batches] of [
      [[delivered], [reread]],
      [[reread], [delivered]],
      [[delivered, reread]],
      [[reread, delivered, reread]],
    ].entries()) {
      const c = `cor_reread_tie_${i}`;
      for (const b of batches)
        await apply(
          store.db,
          b.map((e) => withCid(e, c)),
          fromReread,
        );
      expect((await getProjectedCorrespondence(store.db, c))?.participants[0], `order ${i}`).toMatchObject({
        last_act: 'signed',
        last_act_at: T,
      });
      // A later instant still wins, whoever reported it.
      await apply(store.db, [withCid(later, c)], fromReread);
      expect((await getProjectedCorrespondence(store.db, c))?.participants[0]?.last_act, `order ${i}`).toBe('read');
    }
  });

  it('keeps the latest send_completed summary and is unchanged by applying an event twice', async () => {
    const c = 'cor_summary';
    const late = known('correspondence.send_completed', '2026-01-01T10:09:00Z', 's2', {
      correspondence_id: c,
      delivered: 5,
      held: 0,
      undeliverable: 0,
      total: 5,
    });
    const early = known('correspondence.send_completed', '2026-01-01T10:08:00Z', 's1', {
      correspondence_id: c,
      delivered: 2,
      held: 3,
      undeliverable: 0,
      total: 5,
    });
    await apply(store.db, [late]);
    await apply(store.db, [early, late, early]);
    const before = await snapshot(store.db, c);
    await apply(store.db, [late]);
    expect(await snapshot(store.db, c)).toEqual(before);
    expect((await getProjectedCorrespondence(store.db, c))?.send_summary).toEqual({ delivered: 5, held: 0, undeliverable: 0, total: 5 });
  });

  it('ignores events that carry nothing for it (wallet, claims, campaigns, tests)', async () => {
    await apply(store.db, [
      known('wallet.debited', '2026-01-01T10:00:00Z', 'w1', { amount: 100, correspondence_id: 'cor_wallet' }),
      known('claim.claimed', '2026-01-01T10:00:00Z', 'w2', { claim_id: 'c1', correspondence_id: 'cor_wallet' }),
      known('webhook.test', '2026-01-01T10:00:00Z', 'w3', { message: 'hi' }),
    ]);
    expect(await getProjectedCorrespondence(store.db, 'cor_wallet')).toBeUndefined();
  });

  it('marks a held participant undeliverable when its claim code expires, in either order of arrival', async () => {
    for (const [i, order] of [
      [0, 1],
      [1, 0],
    ].entries()) {
      const c = `cor_claim_${i}`;
      const events = [
        known('correspondence.created', '2026-01-01T10:00:00Z', `cc${i}`, {
          correspondence_id: c,
          status: 'live',
          participants: [{ participant_id: 'p', ref: 'r', state: 'held' }],
        }),
        known('claim.expired', '2026-01-02T10:00:00Z', `ce${i}`, { claim_id: 'clm_1', correspondence_id: c, participant_id: 'p' }),
      ];
      for (const k of order!) await apply(store.db, [events[k]!]);
      const got = await getProjectedCorrespondence(store.db, c);
      expect(got?.participants).toMatchObject([{ participant_id: 'p', ref: 'r', state: 'undeliverable' }]);
    }
  });

  it('pages through open correspondences in id order', async () => {
    for (const id of ['cor_page_a', 'cor_page_b', 'cor_page_c'])
      await apply(store.db, [
        known('correspondence.created', '2026-01-01T10:00:00Z', `pg_${id}`, { correspondence_id: id, status: 'live' }),
      ]);
    const first = await listOpenCorrespondenceIds(store.db, { after: 'cor_page_', limit: 2 });
    expect(first).toEqual(['cor_page_a', 'cor_page_b']);
    expect(await listOpenCorrespondenceIds(store.db, { after: first[1]!, limit: 1 })).toEqual(['cor_page_c']);
  });

  describe('property: the final projection depends only on the set of events', () => {
    const REREAD = '0rr_';
    const rereadIds = (events: AnyKnownEvent[]): Set<string> =>
      new Set(events.filter((e) => e.event_id.startsWith(REREAD)).map((e) => e.event_id));
    const ACTS = ['delivered', 'read', 'approved', 'signed', 'consent_given', 'consent_declined', 'submitted', 'notarised'];
    const STATES = Object.keys(STATE_RANK);
    // Few distinct instants, so equal timestamps (ties broken by event id) are common; microseconds included.
    const instant = fc
      .integer({ min: 0, max: 12 })
      .map((n) => `2026-03-01T09:00:${String(n).padStart(2, '0')}.${String(n * 7919).padStart(6, '0')}Z`);

    const history = fc
      .record({
        participants: fc.uniqueArray(fc.constantFrom('p1', 'p2', 'p3', 'p4'), { minLength: 1, maxLength: 4 }),
        snapshotStates: fc.array(fc.constantFrom(...STATES), { minLength: 4, maxLength: 4 }),
        createdAt: fc.option(instant, { nil: undefined }),
        acts: fc.array(fc.record({ p: fc.nat(3), act: fc.constantFrom(...ACTS), at: instant, reread: fc.boolean() }), { maxLength: 8 }),
        docs: fc.array(fc.record({ doc: fc.constantFrom('d1', 'd2', 'd3'), at: instant }), { maxLength: 3 }),
        summaries: fc.array(fc.record({ d: fc.nat(5), h: fc.nat(5), at: instant }), { maxLength: 3 }),
        endings: fc.array(fc.record({ type: fc.constantFrom('correspondence.sealed', 'correspondence.withdrawn'), at: instant }), {
          maxLength: 2,
        }),
        forms: fc.array(fc.record({ p: fc.nat(3), at: instant }), { maxLength: 2 }),
      })
      .map((h) => (cid: string): AnyKnownEvent[] => {
        const out: AnyKnownEvent[] = [];
        let n = 0;
        const id = (): string => `ev_${String(n++).padStart(3, '0')}`;
        const pid = (i: number): string => h.participants[i % h.participants.length]!;
        if (h.createdAt) {
          out.push(
            known('correspondence.created', h.createdAt, id(), {
              correspondence_id: cid,
              kind: 'letter',
              subject: 's',
              status: 'live',
              participants: h.participants.map((p, i) => ({ participant_id: p, ref: `ref-${p}`, state: h.snapshotStates[i]! })),
            }),
          );
        }
        for (const a of h.acts)
          out.push(
            // An act the reconciler wrote from a re-read has an id that sorts first, so only its flag can win a tie.
            known('participant.acted', a.at, a.reread ? `${REREAD}${id()}` : id(), {
              correspondence_id: cid,
              participant_id: pid(a.p),
              act: a.act,
              ref: `ref-${pid(a.p)}`,
            }),
          );
        for (const d of h.docs) out.push(known('document.attached', d.at, id(), { correspondence_id: cid, document_id: d.doc }));
        for (const s of h.summaries)
          out.push(
            known('correspondence.send_completed', s.at, id(), {
              correspondence_id: cid,
              delivered: s.d,
              held: s.h,
              undeliverable: 0,
              total: s.d + s.h,
            }),
          );
        for (const e of h.endings) out.push(known(e.type, e.at, id(), { correspondence_id: cid }));
        for (const f of h.forms)
          out.push(known('form.response_received', f.at, id(), { correspondence_id: cid, participant_id: pid(f.p) }));
        return out;
      })
      .filter((make) => make('x').length > 0);

    /** A permutation with some events delivered twice, cut into batches. */
    const delivery = fc.record({
      seed: fc.integer(),
      duplicates: fc.array(fc.nat(), { maxLength: 3 }),
      cuts: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 30 }),
    });

    let run = 0;
    it('any order, any batching, any duplicates give the in-order result, and in order nothing moves backwards', async () => {
      await fc.assert(
        fc.asyncProperty(history, delivery, async (make, d) => {
          run++;
          const inOrderId = `cor_prop_${run}_a`;
          const shuffledId = `cor_prop_${run}_b`;
          const inOrder = make(inOrderId).sort(
            (x, y) => Date.parse(x.at) - Date.parse(y.at) || x.at.localeCompare(y.at) || (x.event_id < y.event_id ? -1 : 1),
          );
          const ranks = new Map<string, number>();
          for (const e of inOrder) {
            await apply(store.db, [e], rereadIds([e]));
            const parts = await store.db.query<{ participant_id: string; state_rank: number }>(
              'SELECT participant_id, state_rank FROM participant_projection WHERE correspondence_id = $1',
              [inOrderId],
            );
            for (const p of parts.rows) {
              expect(p.state_rank).toBeGreaterThanOrEqual(ranks.get(p.participant_id) ?? -1);
              ranks.set(p.participant_id, p.state_rank);
            }
          }

          const shuffled = fc.sample(fc.shuffledSubarray(make(shuffledId), { minLength: make('x').length }), {
            seed: d.seed,
            numRuns: 1,
          })[0]!;
          for (const i of d.duplicates) shuffled.push(shuffled[i % shuffled.length]!);
          let at = 0;
          for (let k = 0; at < shuffled.length; k++) {
            const size = d.cuts[k % d.cuts.length]!;
            await apply(store.db, shuffled.slice(at, at + size), rereadIds(shuffled));
            at += size;
          }
          expect(await snapshot(store.db, shuffledId)).toEqual(await snapshot(store.db, inOrderId));
        }),
        { numRuns: kind === 'pglite' ? 40 : 60 },
      );
    });
  });
});
