import { describe, expect, it } from 'vitest';
import { EVENT_CATALOGUE, EVENT_TYPES, isKnownEventType } from '../../src/events/catalogue.js';
import { validateEvent } from '../../src/events/validate.js';
import { EVENT_TYPE_LABELS } from '../../src/metrics/labels.js';

/** The data docs/events.md shows for each type, with only the required fields. */
const MINIMAL: Record<string, Record<string, unknown>> = {
  'correspondence.created': { correspondence_id: 'cor_1' },
  'correspondence.send_completed': { correspondence_id: 'cor_1', delivered: 1, held: 0, undeliverable: 0, total: 1 },
  'participant.acted': { correspondence_id: 'cor_1', participant_id: 'par_1', act: 'approved', ref: 'emp-42' },
  'document.attached': { correspondence_id: 'cor_1', document_id: 'doc_1' },
  'form.response_received': { correspondence_id: 'cor_1', participant_id: 'par_1' },
  'correspondence.sealed': { correspondence_id: 'cor_1' },
  'correspondence.withdrawn': { correspondence_id: 'cor_1' },
  'claim.claimed': { claim_id: 'clm_1' },
  'claim.expired': { claim_id: 'clm_1' },
  'wallet.debited': { amount: 1250 },
  'campaign.status_changed': { campaign_id: 'cmp_1', status: 'running' },
  'webhook.test': { message: 'hello' },
};

const row = (type: string, data: unknown, overrides: Record<string, unknown> = {}) => ({
  event_id: 'evt_1',
  type,
  payload: { event_id: 'evt_1', type, at: '2026-11-18T10:15:00.000Z', data, ...overrides },
});

describe('event catalogue', () => {
  it('covers exactly the twelve types the spec names (and the metric labels)', () => {
    expect(EVENT_TYPES.sort()).toEqual([...EVENT_TYPE_LABELS].sort());
    expect(EVENT_TYPES).toHaveLength(12);
    expect(Object.keys(MINIMAL).sort()).toEqual(EVENT_TYPES.sort());
  });

  it.each(Object.entries(MINIMAL))('accepts %s with only its required fields', (type, data) => {
    expect(validateEvent(row(type, data))).toMatchObject({ kind: 'known', event: { type, data } });
  });

  it.each(Object.entries(MINIMAL).filter(([, d]) => Object.keys(d).length > 0))(
    'quarantines %s without its first required field, naming it',
    (type, data) => {
      const [first] = Object.keys(data);
      const { [first!]: _dropped, ...rest } = data;
      const v = validateEvent(row(type, rest));
      expect(v.kind).toBe('invalid');
      if (v.kind === 'invalid') expect(v.reason).toContain(first);
    },
  );

  it('keeps unknown fields and accepts act values it has never seen', () => {
    const data = { correspondence_id: 'cor_1', participant_id: 'par_1', act: 'notarised_by_owl', ref: 'r', snapshot: { a: 1 } };
    const v = validateEvent(row('participant.acted', data));
    expect(v).toMatchObject({ kind: 'known', event: { data } });
  });

  it('accepts the send_completed count names docs/events.md fixes, and only whole non-negative counts', () => {
    const ok = { correspondence_id: 'cor_1', delivered: 3, held: 1, undeliverable: 1, total: 5, run_id: 'run_7' };
    expect(validateEvent(row('correspondence.send_completed', ok))).toMatchObject({ kind: 'known', event: { data: ok } });
    expect(validateEvent(row('correspondence.send_completed', { ...ok, held: -1 })).kind).toBe('invalid');
    expect(validateEvent(row('correspondence.send_completed', { ...ok, total: '5' })).kind).toBe('invalid');
  });

  it('validates the participant snapshot of correspondence.created', () => {
    const good = {
      correspondence_id: 'cor_1',
      status: 'live',
      participants: [{ participant_id: 'par_1', ref: 'r', state: 'held', extra: true }],
    };
    expect(validateEvent(row('correspondence.created', good)).kind).toBe('known');
    const bad = { correspondence_id: 'cor_1', participants: [{ ref: 'r', state: 'held' }] };
    const v = validateEvent(row('correspondence.created', bad));
    expect(v.kind).toBe('invalid');
    if (v.kind === 'invalid') expect(v.reason).toMatch(/participants\[0\]\.participant_id/);
  });

  it('passes unknown types through untyped instead of failing them', () => {
    const v = validateEvent(row('correspondence.reminded', { correspondence_id: 'cor_1', whatever: [1] }));
    expect(v).toEqual({
      kind: 'unknown',
      event: {
        event_id: 'evt_1',
        type: 'correspondence.reminded',
        at: '2026-11-18T10:15:00.000Z',
        data: { correspondence_id: 'cor_1', whatever: [1] },
      },
    });
    expect(isKnownEventType('correspondence.reminded')).toBe(false);
    expect(isKnownEventType('toString')).toBe(false);
  });

  it('checks the envelope again: stored id and type must match, data must be an object, a payload must exist', () => {
    const data = MINIMAL['webhook.test'];
    expect(validateEvent(row('webhook.test', data, { event_id: 'evt_other' }))).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/event_id/),
    });
    expect(validateEvent(row('webhook.test', data, { type: 'claim.claimed' }))).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/type/),
    });
    expect(validateEvent(row('webhook.test', [1, 2]))).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/data must be an object/),
    });
    expect(validateEvent(row('webhook.test', data, { at: 'yesterday' }))).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/at must be/),
    });
    expect(validateEvent({ event_id: 'evt_1', type: 'webhook.test', payload: null })).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/no payload/),
    });
  });

  it('keeps reasons short enough for last_error', () => {
    const many = { correspondence_id: 'cor_1', participants: Array.from({ length: 200 }, () => ({})) };
    const v = validateEvent(row('correspondence.created', many));
    expect(v.kind === 'invalid' && v.reason.length).toBeLessThanOrEqual(1000);
  });

  it('is one map of zod schemas, so types and validation cannot drift', () => {
    for (const schema of Object.values(EVENT_CATALOGUE)) expect(typeof schema.safeParse).toBe('function');
  });
});
