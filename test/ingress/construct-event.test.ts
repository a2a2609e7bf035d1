import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { constructEvent, PostroomError, sign, WebhookVerificationError } from '../../src/index.js';
import { loadSignatureVectors } from '../support/vectors.js';

const vectors = loadSignatureVectors();
const SECRET = 'whsec_construct_event_test_secret';
const NOW = 1_795_000_000;

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect(err).toBeInstanceOf(PostroomError);
    return (err as WebhookVerificationError).code;
  }
}

const acted = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    event_id: 'evt_ce_1',
    type: 'participant.acted',
    at: '2026-11-18T10:15:00Z',
    data: { correspondence_id: 'cor_1', participant_id: 'par_1', act: 'approved', ref: 'emp-42' },
    ...over,
  });

describe('constructEvent', () => {
  describe('signature vectors (test/fixtures/signature-vectors.json)', () => {
    for (const c of vectors.cases) {
      it(c.name, () => {
        const body = Buffer.from(c.body_base64, 'base64');
        const run = () =>
          constructEvent(body, { 'x-service-signature': c.header }, c.secrets, {
            now: c.now,
            toleranceSeconds: c.tolerance_seconds,
            scheme: c.scheme,
          });
        const code = codeOf(run);
        if (c.expect === 'valid') {
          // The signature holds; a body that is not an event is refused as such, never as a signature failure.
          expect([undefined, 'invalid_payload', 'invalid_event']).toContain(code);
        } else {
          expect(code).toBe(c.reason);
        }
      });
    }
  });

  it('returns the typed event for a known type and an untyped one for a type the catalogue does not know', () => {
    const body = acted();
    const event = constructEvent(body, { 'X-Service-Signature': sign({ secret: SECRET, body, timestamp: NOW }) }, SECRET, {
      now: new Date(NOW * 1000),
    });
    expect(event.type).toBe('participant.acted');
    if (event.type === 'participant.acted') expect(event.data.act).toBe('approved');

    const other = acted({ type: 'brand.new', data: { x: 1 } });
    const headers = new Headers({ 'x-service-signature': sign({ secret: SECRET, body: other, timestamp: NOW }) });
    expect(constructEvent(other, headers, [SECRET], { now: NOW })).toEqual({
      event_id: 'evt_ce_1',
      type: 'brand.new',
      at: '2026-11-18T10:15:00Z',
      data: { x: 1 },
    });
  });

  it('refuses bad input with a stable code', () => {
    const body = acted();
    const signed = (b: string, t = NOW) => ({ 'x-service-signature': sign({ secret: SECRET, body: b, timestamp: t }) });
    expect(codeOf(() => constructEvent(body, {}, SECRET, { now: NOW }))).toBe('missing_header');
    expect(codeOf(() => constructEvent(body, { 'x-service-signature': 'v1=abc' }, SECRET, { now: NOW }))).toBe('malformed_header');
    expect(codeOf(() => constructEvent(body, signed(body, NOW - 301), SECRET, { now: NOW }))).toBe('timestamp_outside_window');
    expect(codeOf(() => constructEvent(body, signed(body, NOW - 301), SECRET, { now: NOW, toleranceSeconds: 600 }))).toBeUndefined();
    expect(codeOf(() => constructEvent(body, signed(body), 'whsec_other', { now: NOW }))).toBe('no_matching_signature');
    expect(codeOf(() => constructEvent(`${body} `, signed(body), SECRET, { now: NOW }))).toBe('no_matching_signature');
    expect(codeOf(() => constructEvent('not json', signed('not json'), SECRET, { now: NOW }))).toBe('invalid_payload');
    const wrongData = acted({ data: { correspondence_id: 'cor_1' } });
    expect(codeOf(() => constructEvent(wrongData, signed(wrongData), SECRET, { now: NOW }))).toBe('invalid_event');
    expect(codeOf(() => constructEvent(body, { ...signed(body), 'x-service-event-id': 'evt_other' }, SECRET, { now: NOW }))).toBe(
      'event_id_mismatch',
    );
    expect(
      codeOf(() => constructEvent(body, { ...signed(body), 'x-service-event-type': 'correspondence.sealed' }, SECRET, { now: NOW })),
    ).toBe('type_mismatch');
  });

  it('never returns an event for bytes the secret did not sign', () => {
    const body = acted();
    const header = sign({ secret: SECRET, body, timestamp: NOW });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        fc.pre(Buffer.compare(Buffer.from(bytes), Buffer.from(body)) !== 0);
        expect(codeOf(() => constructEvent(bytes, { 'x-service-signature': header }, SECRET, { now: NOW }))).toBe('no_matching_signature');
      }),
    );
  });
});
