import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Correspondence } from '../../src/client/types.js';
import type { AnyKnownEvent } from '../../src/events/catalogue.js';
import { validateEvent } from '../../src/events/validate.js';
import { applyToProjection } from '../../src/projection/apply.js';
import { compareWithService } from '../../src/projection/compare.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { planCorrespondence } from '../../src/reconciler/synthetic.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

function known(envelope: { event_id: string; type: string; at: string; data: Record<string, unknown> }): AnyKnownEvent {
  const v = validateEvent({ event_id: envelope.event_id, type: envelope.type, payload: envelope });
  if (v.kind !== 'known') throw new Error(`invalid test event: ${JSON.stringify(v)}`);
  return v.event;
}

const CREATED = '2026-05-01T08:00:00.000Z';
const ACTS = ['delivered', 'read', 'approved', 'signed', 'consent_given', 'consent_declined'];
// Few instants, so acts often share a millisecond; the service orders those by when they happened (seq).
const instant = fc.integer({ min: 1, max: 4 }).map((n) => new Date(Date.parse(CREATED) + n * 1000 + (n % 2)).toISOString());

/**
 * What the reconciler promises for acts: whatever part of a file's history reached the read
 * model, in whatever order, applying what one re-read plans leaves every participant's last
 * act equal to the service's, and a second plan is empty. The service's own order of acts
 * that share a millisecond is theirs to know: the event ids here are random, so they say
 * nothing of it.
 */
describe.each(kinds)('a re-read brings every last act to the service (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  let run = 0;
  it('for any history, any part of it delivered, in any order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            p: fc.nat(2),
            act: fc.constantFrom(...ACTS),
            at: instant,
            id: fc
              .tuple(
                fc.constantFrom('evt_', 'zz_', '0', 'whk_'),
                fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 8, maxLength: 8 }),
              )
              .map(([prefix, hex]) => prefix + hex),
          }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        fc.array(fc.boolean(), { minLength: 11, maxLength: 11 }),
        fc.boolean(),
        async (history, delivered, createdDelivered) => {
          const cid = `cor_conv_${kind}_${++run}`;
          const pids = ['p0', 'p1', 'p2'].map((p) => `${cid}_${p}`);
          // The service: a direct send delivers every participant as the file is created (a delivery is an act),
          // then the acts, in the order they happened (seq); an instant is never before the previous one's.
          const sent = pids.map((_, p) => ({ p, act: 'delivered', at: CREATED, id: `sent${p}` }));
          const acts = [...sent, ...history]
            .map((h, seq) => ({ ...h, seq }))
            .sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || a.seq - b.seq)
            .map((a) => ({ ...a, eventId: `${a.id}_${a.seq}` }));
          const last = new Map<string, (typeof acts)[number]>();
          for (const a of acts) last.set(pids[a.p]!, a);
          const service: Correspondence = {
            correspondence_id: cid,
            kind: 'letter',
            subject: 's',
            content_type: 'application/pdf',
            document_ids: [],
            status: 'live',
            created_at: CREATED,
            participants: pids.map((pid) => ({
              participant_id: pid,
              ref: `ref-${pid}`,
              state: 'delivered',
              last_act: last.get(pid)?.act ?? null,
              last_act_at: last.get(pid)?.at ?? null,
            })),
            send_summary: null,
          } as Correspondence;

          const events: AnyKnownEvent[] = [];
          if (createdDelivered)
            events.push(
              known({
                event_id: `evt_created_${cid}`,
                type: 'correspondence.created',
                at: CREATED,
                data: {
                  correspondence_id: cid,
                  kind: 'letter',
                  subject: 's',
                  content_type: 'application/pdf',
                  status: 'live',
                  document_ids: [],
                  created_at: CREATED,
                  participants: pids.map((pid) => ({ participant_id: pid, ref: `ref-${pid}`, state: 'delivered' })),
                },
              }),
            );
          acts.forEach((a, i) => {
            if (delivered[i])
              events.push(
                known({
                  event_id: a.eventId,
                  type: 'participant.acted',
                  at: a.at,
                  data: { correspondence_id: cid, participant_id: pids[a.p]!, act: a.act, ref: `ref-${pids[a.p]}` },
                }),
              );
          });
          await store.db.transaction((tx) => applyToProjection(tx, events.reverse()));

          const plan = planCorrespondence(service, await getProjectedCorrespondence(store.db, cid), new Date(), 120_000);
          const synthetic = plan.events.map(known);
          await store.db.transaction((tx) => applyToProjection(tx, synthetic, new Set(synthetic.map((e) => e.event_id))));

          const after = await getProjectedCorrespondence(store.db, cid);
          expect(compareWithService(after, service)).toEqual([]);
          expect(planCorrespondence(service, after, new Date(), 120_000).events).toEqual([]);
        },
      ),
      { numRuns: kind === 'pglite' ? 60 : 120 },
    );
  });
});
