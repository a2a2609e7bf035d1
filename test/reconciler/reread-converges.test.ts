import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import type { AnyKnownEvent } from '../../src/events/catalogue.js';
import { validateEvent } from '../../src/events/validate.js';
import { applyToProjection } from '../../src/projection/apply.js';
import { compareWithService } from '../../src/projection/compare.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { planCorrespondence, type ServiceFile } from '../../src/reconciler/synthetic.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

function known(envelope: { event_id: string; type: string; at: string; data: Record<string, unknown> }): AnyKnownEvent | undefined {
  const v = validateEvent({ event_id: envelope.event_id, type: envelope.type, payload: envelope });
  return v.kind === 'known' ? v.event : undefined;
}

const ACTS = ['read', 'approved', 'signed', 'consent_given', 'consent_declined'] as const;

/** What happens to a file after it is sent; indexes pick among its participants and claims. */
const op = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('act' as const), p: fc.nat(3), act: fc.constantFrom(...ACTS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('verify' as const), p: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('complete' as const, 'attach' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('seal' as const, 'withdraw' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('claim' as const, 'expire' as const) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 3 }) }) },
);

/**
 * The reconciler's promise, with the sandbox as the service and no model of our own: a file
 * goes through any sequence of changes (sends direct or queued, to recipients delivered, held,
 * undeliverable or addressed by claim code; acts, verifications, claims, documents, seal or
 * withdrawal), with a clock that often stands still so changes share a millisecond. Any part
 * of its events reaches the read model, in any order. One re-read then plans events that,
 * applied, leave the projection equal to the file on every compared field, and a second
 * re-read plans nothing.
 */
describe.each(kinds)('a re-read brings the projection to the sandbox (%s)', (kind) => {
  let store: TestStore;
  let sandbox: Sandbox;
  let now = Date.parse('2026-06-01T09:00:00.000Z');
  const clock: Clock = { now: () => now };

  beforeAll(async () => {
    store = await openTestStore(kind);
    // No endpoint, so nothing is dispatched; a queued send drains only when the test says so.
    sandbox = await startSandbox({ clock, queueDelayMs: 3_600_000, seed: 20261125 });
  });
  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  const send = async (queued: boolean, outcomes: string[]): Promise<string> => {
    const res = await fetch(`${sandbox.url}/sender/v2/correspondence`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${sandbox.apiKey}`,
        'content-type': 'application/json',
        'x-sandbox-send-mode': queued ? 'queued' : 'direct',
      },
      body: JSON.stringify({
        kind: 'letter',
        subject: 'Converge',
        content_type: 'text/plain',
        document_ids: [],
        recipients: outcomes.map((o, i) => ({
          addressing:
            o === 'claim'
              ? { type: 'claim_code', name: `Claimant ${i}` }
              : { type: 'nin', nin: `${String(Math.floor(Math.random() * 1e10)).padStart(10, '0')}${o}` },
          ref: `ref-${i}-${Math.random().toString(36).slice(2, 8)}`,
        })),
      }),
    });
    const json = (await res.json()) as { correspondence_id: string };
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return json.correspondence_id;
  };

  it('for any life of a file and any part of its events, in any order', async () => {
    const c = sandbox.control;
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(fc.constantFrom('0', '8', '9', 'claim'), { minLength: 1, maxLength: 4 }),
        fc.array(op, { minLength: 4, maxLength: 24, size: 'medium' }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        fc.integer(),
        async (queued, outcomes, ops, keep, seed) => {
          const cid = await send(queued, outcomes);
          for (const o of ops) {
            const file = c.correspondence(cid);
            const pid = (i: number): string => file.participants[i % file.participants.length]!.participant_id;
            const claims = c.claims().filter((k) => k.correspondence_id === cid && k.status === 'open');
            try {
              if (o.kind === 'tick') now += o.ms;
              else if (o.kind === 'act') c.act(pid(o.p), o.act);
              else if (o.kind === 'verify') c.verifyParticipant(pid(o.p));
              else if (o.kind === 'complete') c.completeSend(cid);
              else if (o.kind === 'seal') c.seal(cid);
              else if (o.kind === 'withdraw') c.withdraw(cid);
              else if (o.kind === 'attach') c.attach(cid);
              else if (o.kind === 'claim' && claims[0]) c.claim(claims[0].claim_id);
              else if (o.kind === 'expire' && claims[0]) c.expireClaim(claims[0].claim_id);
            } catch {
              // Not allowed in the file's state (acting on a sealed file, verifying a delivered participant): the service refuses it too.
            }
          }

          const all = c
            .events({ correspondenceId: cid })
            .map((e) => c.event(e.event_id))
            .flatMap((e) => known({ event_id: e.event_id, type: e.type, at: e.at, data: e.data }) ?? []);
          const delivered = fc.sample(fc.shuffledSubarray(all.filter((_, i) => keep[i % keep.length])), { seed, numRuns: 1 })[0]!;
          if (delivered.length > 0) await store.db.transaction((tx) => applyToProjection(tx, delivered));

          // A fresh object type: the view's interface has no index signature, the client's type does.
          const service: ServiceFile = { ...c.correspondence(cid) };
          const plan = planCorrespondence(service, await getProjectedCorrespondence(store.db, cid), new Date(now), 120_000);
          const synthetic = plan.events.map((e) => known(e)!);
          if (synthetic.length > 0)
            await store.db.transaction((tx) => applyToProjection(tx, synthetic, new Set(synthetic.map((e) => e.event_id))));

          const after = await getProjectedCorrespondence(store.db, cid);
          expect(compareWithService(after, service)).toEqual([]);
          expect(planCorrespondence(service, after, new Date(now), 120_000).events).toEqual([]);
          now += 5;
        },
      ),
      { numRuns: kind === 'pglite' ? 60 : 150 },
    );
  }, 120_000);
});
