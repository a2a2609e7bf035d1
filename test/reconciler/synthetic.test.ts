import { describe, expect, it } from 'vitest';
import type { Correspondence } from '../../src/client/types.js';
import type { ProjectedCorrespondence } from '../../src/projection/read.js';
import { planCorrespondence, syntheticEventId, type ServiceFile } from '../../src/reconciler/synthetic.js';

const diffCorrespondence = (s: ServiceFile, p: ProjectedCorrespondence | undefined, at: Date) =>
  planCorrespondence(s, p, at, 120_000).events;

const now = new Date('2026-11-20T12:00:00Z');

function service(overrides: Partial<Correspondence> = {}): Correspondence {
  return {
    correspondence_id: 'cor_1',
    kind: 'letter',
    subject: 's',
    status: 'live',
    created_at: '2026-11-20T10:00:00.000Z',
    participants: [
      { participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'read', last_act_at: '2026-11-20T11:00:00.000Z' },
      { participant_id: 'par_2', ref: 'r2', state: 'held', last_act: null, last_act_at: null },
    ],
    send_summary: null,
    ...overrides,
  } as Correspondence;
}

function projected(overrides: Partial<ProjectedCorrespondence> = {}): ProjectedCorrespondence {
  return {
    correspondence_id: 'cor_1',
    status: 'live',
    kind: 'letter',
    subject: 's',
    content_type: null,
    created_at: '2026-11-20T10:00:00.000Z',
    document_ids: [],
    last_event: { event_id: 'evt_x', type: 'participant.acted', at: '2026-11-20T11:00:00.000Z' },
    updated_at: '2026-11-20T11:00:00.000Z',
    participants: [
      { participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'read', last_act_at: '2026-11-20T11:00:00.000Z' },
      { participant_id: 'par_2', ref: 'r2', state: 'held', last_act: null, last_act_at: null },
    ],
    send_summary: null,
    ...overrides,
  };
}

describe('planCorrespondence: synthetic events', () => {
  it('finds nothing when the projection equals the service', () => {
    expect(diffCorrespondence(service(), projected(), now)).toEqual([]);
  });

  it('recreates a correspondence the projection never saw as a snapshot plus the acts', () => {
    const events = diffCorrespondence(service(), undefined, now);
    expect(events.map((e) => e.type)).toEqual(['correspondence.created', 'participant.acted']);
    expect(events[0]!.data).toMatchObject({
      correspondence_id: 'cor_1',
      status: 'live',
      participants: [
        { participant_id: 'par_1', state: 'delivered' },
        { participant_id: 'par_2', state: 'held' },
      ],
    });
    expect(events[1]!).toMatchObject({ at: '2026-11-20T11:00:00.000Z', data: { participant_id: 'par_1', act: 'read' } });
  });

  it('brings a participant forward with participant.acted and a held one with a snapshot', () => {
    const p = projected({
      participants: [
        { participant_id: 'par_1', ref: 'r1', state: 'pending', last_act: null, last_act_at: null },
        { participant_id: 'par_2', ref: 'r2', state: 'pending', last_act: null, last_act_at: null },
      ],
    });
    const types = diffCorrespondence(service(), p, now).map((e) => e.type);
    expect(types).toEqual(['correspondence.created', 'participant.acted']);
  });

  it('emits the final status and the send summary when the projection lacks them', () => {
    const events = diffCorrespondence(
      service({ status: 'sealed', send_summary: { delivered: 1, held: 1, undeliverable: 0, total: 2 } }),
      projected(),
      now,
    );
    expect(events.map((e) => e.type)).toEqual(['correspondence.sealed', 'correspondence.send_completed']);
    expect(events[1]!.data).toMatchObject({ delivered: 1, held: 1, undeliverable: 0, total: 2 });
  });

  it('never asks the projection to move backwards', () => {
    const ahead = projected({
      status: 'sealed',
      participants: [
        { participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'signed', last_act_at: '2026-11-20T11:30:00.000Z' },
        { participant_id: 'par_2', ref: 'r2', state: 'delivered', last_act: 'delivered', last_act_at: '2026-11-20T11:00:00.000Z' },
      ],
    });
    expect(diffCorrespondence(service(), ahead, now)).toEqual([]);
  });

  it('writes the act the file shows when the read model has another act of the same instant (two acts in one millisecond)', () => {
    const T = '2026-11-20T11:00:00.000Z';
    const s = service({
      participants: [{ participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'signed', last_act_at: T }],
    } as Partial<Correspondence>);
    const p = projected({
      participants: [{ participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'consent_declined', last_act_at: T }],
    });
    const events = diffCorrespondence(s, p, now);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'participant.acted', at: T, data: { participant_id: 'par_1', act: 'signed' } });
    // A service that shows microseconds: the event keeps them, so it follows the read model's act of that millisecond.
    const fine = service({
      participants: [
        { participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'signed', last_act_at: '2026-11-20T11:00:00.000900Z' },
      ],
    } as Partial<Correspondence>);
    expect(diffCorrespondence(fine, p, now)).toMatchObject([{ at: '2026-11-20T11:00:00.000900Z', data: { act: 'signed' } }]);
    // The same act at the same instant is already known: nothing to write.
    const same = projected({
      participants: [{ participant_id: 'par_1', ref: 'r1', state: 'delivered', last_act: 'signed', last_act_at: T }],
    });
    expect(diffCorrespondence(s, same, now)).toEqual([]);
  });

  it('gives the same facts the same ids, so a second run writes nothing new', () => {
    const a = diffCorrespondence(service({ status: 'withdrawn' }), undefined, now);
    const b = diffCorrespondence(service({ status: 'withdrawn' }), undefined, new Date(now.getTime() + 60_000));
    expect(a.map((e) => e.event_id)).toEqual(b.map((e) => e.event_id));
    expect(new Set(a.map((e) => e.event_id)).size).toBe(a.length);
    expect(syntheticEventId('cor_1', 'par_1', 'delivered')).not.toBe(syntheticEventId('cor_1', 'par_1', 'held'));
  });
});

describe('planCorrespondence: what a re-read explains', () => {
  const kinds = (s: ServiceFile, p: ProjectedCorrespondence | undefined) => {
    const plan = planCorrespondence(s, p, now, 120_000);
    return [...plan.explanations, ...plan.standing].map((e) => `${e.event_type}:${e.outcome}${e.exact ? ':exact' : ''}`).sort();
  };

  it('stores nothing when the projection equals the service; what the file shows still accounts for acts it superseded', () => {
    const plan = planCorrespondence(service(), projected(), now, 120_000);
    expect(plan.explanations).toEqual([]);
    // par_1 read after the file was created: whether it was ever held the file does not show, so no claim;
    // par_2 is held: nothing to account for.
    expect(plan.standing.map((e) => `${e.event_type}:${e.outcome}:${e.participant_id}`).sort()).toEqual([
      'participant.acted:state_synced:par_1',
    ]);
  });

  it('a claim the read model already has: a participant of a direct send whose latest act is its delivery, after the creation', () => {
    const delivered = {
      participant_id: 'par_1',
      ref: 'r1',
      state: 'delivered',
      last_act: 'delivered',
      last_act_at: '2026-11-20T11:00:00.000Z',
    };
    const claims = (s: ServiceFile) =>
      planCorrespondence(s, projected({ participants: [delivered] }), now, 120_000)
        .standing.filter((e) => e.event_type.startsWith('claim.'))
        .map((e) => `${e.event_type}:${e.participant_id}`);
    expect(claims(service({ participants: [delivered] } as Partial<Correspondence>))).toEqual(['claim.claimed:par_1']);
    // A queued send's participants start pending, never held: its later deliveries are no claims.
    expect(
      claims(
        service({
          participants: [delivered],
          send_summary: { delivered: 1, held: 0, undeliverable: 0, total: 1 },
        } as Partial<Correspondence>),
      ),
    ).toEqual([]);
    // Delivered at the creation itself: it was never held.
    const atCreation = { ...delivered, last_act_at: '2026-11-20T10:00:00.000Z' };
    expect(
      planCorrespondence(
        service({ participants: [atCreation] } as Partial<Correspondence>),
        projected({ participants: [atCreation] }),
        now,
        120_000,
      ).standing.filter((e) => e.event_type.startsWith('claim.')),
    ).toEqual([]);
  });

  it('a file never seen: its creation exactly, its latest act exactly, earlier acts as superseded, a claim it may have held', () => {
    expect(kinds(service(), undefined)).toEqual([
      'claim.claimed:state_synced',
      'correspondence.created:recovered:exact',
      'participant.acted:recovered:exact',
      'participant.acted:state_synced',
    ]);
    const [created] = planCorrespondence(service(), undefined, now, 120_000).explanations;
    // No event of a file precedes the file, and a delivery follows its event.
    expect(created).toMatchObject({ window_from: new Date('2026-11-20T10:00:00.000Z'), anchor: new Date('2026-11-20T10:00:00.000Z') });
  });

  it('an earlier act in the same millisecond as the latest is accounted for as superseded', () => {
    const T = '2026-11-20T11:00:00.000Z';
    const superseded = planCorrespondence(service(), projected(), now, 120_000).standing.find((e) => e.event_type === 'participant.acted');
    // A dead delivery of that earlier act is made at the latest act's instant at the soonest: the window must hold it.
    expect(superseded?.window_to.getTime()).toBeGreaterThanOrEqual(Date.parse(T));
    expect(superseded).toMatchObject({ outcome: 'state_synced', single: false, exact: false });
  });

  it('a claim explains only a participant the read model had as held (a direct send)', () => {
    const s = service({
      participants: [{ participant_id: 'par_2', ref: 'r2', state: 'undeliverable', last_act: null, last_act_at: null }],
    } as Partial<Correspondence>);
    const held = projected({ participants: [{ participant_id: 'par_2', ref: 'r2', state: 'held', last_act: null, last_act_at: null }] });
    const pending = projected({
      participants: [{ participant_id: 'par_2', ref: 'r2', state: 'pending', last_act: null, last_act_at: null }],
    });
    expect(kinds(s, held)).toEqual(['claim.expired:state_synced']);
    expect(kinds(s, pending)).toEqual([]);
  });

  it('a queued send: participants undeliverable beyond the summary counts are lapsed claims, those within it are the send', () => {
    const parts = [
      { participant_id: 'par_a', ref: 'a', state: 'undeliverable', last_act: null, last_act_at: null },
      { participant_id: 'par_b', ref: 'b', state: 'undeliverable', last_act: null, last_act_at: null },
    ];
    const pendings = parts.map((p) => ({ ...p, state: 'pending' }));
    const summary = { delivered: 0, held: 1, undeliverable: 1, total: 2 };
    const s = service({ participants: parts, send_summary: summary } as Partial<Correspondence>);
    expect(kinds(s, projected({ participants: pendings, send_summary: summary })).filter((k) => k.startsWith('claim'))).toEqual([
      'claim.expired:state_synced',
    ]);
    const none = service({ participants: parts, send_summary: { ...summary, held: 0, undeliverable: 2 } } as Partial<Correspondence>);
    expect(
      kinds(none, projected({ participants: pendings, send_summary: { ...summary, held: 0, undeliverable: 2 } })).filter((k) =>
        k.startsWith('claim'),
      ),
    ).toEqual([]);
  });

  it('documents: attached ones the read model lacks are recovered; with the creation missed too the snapshot carries them', () => {
    const s = service({ document_ids: ['doc_1'] } as Partial<Correspondence>);
    expect(kinds(s, projected()).filter((k) => k.startsWith('document'))).toEqual(['document.attached:recovered']);
    expect(kinds(s, undefined)).toContain('document.attached:state_synced');
  });
});
