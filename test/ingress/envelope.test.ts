import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, parseEnvelope } from '../../src/ingress/envelope.js';

const valid = { event_id: 'evt_1', type: 'participant.acted', at: '2026-11-18T10:15:00Z', data: { correspondence_id: 'cor_1' } };
const enc = (v: unknown): Buffer => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

describe('parseEnvelope', () => {
  it('accepts a valid envelope and extracts the correspondence id', () => {
    expect(parseEnvelope(enc(valid))).toMatchObject({ ok: true, eventId: 'evt_1', type: 'participant.acted', correspondenceId: 'cor_1' });
  });

  it.each([
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), /UTF-8/],
    ['not JSON', enc('{'), /not valid JSON/],
    ['an array', enc([valid]), /JSON object/],
    ['missing event_id', enc({ ...valid, event_id: undefined }), /event_id/],
    ['numeric event_id', enc({ ...valid, event_id: 7 }), /event_id/],
    ['control characters in event_id', enc({ ...valid, event_id: 'a\nb' }), /printable/],
    ['missing type', enc({ ...valid, type: '' }), /type/],
    ['a bad timestamp', enc({ ...valid, at: 'yesterday' }), /ISO 8601/],
    ['February 30 (Date.parse rolls it over, Postgres refuses it)', enc({ ...valid, at: '2026-02-30T00:00:00Z' }), /ISO 8601/],
    ['April 31', enc({ ...valid, at: '2026-04-31T12:00:00+02:00' }), /ISO 8601/],
    ['February 29 of a common year', enc({ ...valid, at: '2027-02-29T00:00:00Z' }), /ISO 8601/],
    ['February 29 of 1900 (a century, not a leap year)', enc({ ...valid, at: '1900-02-29T00:00:00Z' }), /ISO 8601/],
    ['February 29 of 2100', enc({ ...valid, at: '2100-02-29T00:00:00Z' }), /ISO 8601/],
    ['year 0000', enc({ ...valid, at: '0000-06-01T00:00:00Z' }), /ISO 8601/],
    ['an offset beyond 15:59', enc({ ...valid, at: '2026-01-01T00:00:00-16:00' }), /ISO 8601/],
    ['a lone surrogate', enc('{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":"\\udc00"}}'), /surrogate/],
    ['a numeric overflow', enc('{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":1e400000}}'), /numeric/],
    ['too many decimals', enc('{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":1E-17000}}'), /numeric/],
    [
      'a fraction of 16,001 digits, with no exponent',
      enc(`{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":0.${'7'.repeat(16_001)}}}`),
      /numeric/,
    ],
    ['data not an object', enc({ ...valid, data: [1] }), /data must be an object/],
    ['U+0000 in a value', enc({ ...valid, data: { x: 'a\u0000' } }), /U\+0000/],
    ['deep nesting', enc({ ...valid, data: JSON.parse('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1)) }), /deeper/],
    [
      'deep nesting of objects',
      enc(
        '{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":' +
          '{"a":'.repeat(MAX_JSON_DEPTH) +
          '1' +
          '}'.repeat(MAX_JSON_DEPTH + 1),
      ),
      /deeper/,
    ],
    // Neither bracket alone passes the depth: the count that lets the walk run must take both.
    [
      'deep nesting of objects and arrays in turn',
      enc(
        '{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":' +
          '[{"a":'.repeat(MAX_JSON_DEPTH / 2) +
          '1' +
          '}]'.repeat(MAX_JSON_DEPTH / 2) +
          '}}',
      ),
      /deeper/,
    ],
  ])('quarantines %s with a reason', (_name, body, reason) => {
    const r = parseEnvelope(body);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it('keeps the body event_id for quarantined envelopes that have one, and a stable hash id otherwise', () => {
    const withId = parseEnvelope(enc({ ...valid, at: 'bad' }));
    expect(withId).toMatchObject({ ok: false, eventId: 'evt_1', type: 'participant.acted' });
    const a = parseEnvelope(enc('nope'));
    const b = parseEnvelope(enc('nope'));
    expect(a.eventId).toMatch(/^quarantine:[0-9a-f]{64}$/);
    expect(a.eventId).toBe(b.eventId);
  });

  it('keeps real instants, February 29 of a leap year and surrogate pairs, and numbers inside strings', () => {
    expect(parseEnvelope(enc({ ...valid, at: '2028-02-29T23:59:59.999999+15:59' })).ok).toBe(true);
    expect(parseEnvelope(enc({ ...valid, at: '2000-02-29T00:00:00Z' })).ok).toBe(true);
    expect(parseEnvelope(enc({ ...valid, at: '1600-02-29T00:00:00-00:30' })).ok).toBe(true);
    expect(parseEnvelope(enc({ ...valid, data: { x: '😀 1e400000' } })).ok).toBe(true);
    expect(parseEnvelope(enc(`{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":0.${'7'.repeat(15_999)}}}`)).ok).toBe(
      true,
    );
    expect(parseEnvelope(enc('{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"x":1e300,"y":"\\ud83d\\ude00"}}')).ok).toBe(
      true,
    );
  });

  it('does not let __proto__ keys reach the prototype', () => {
    const r = parseEnvelope(
      enc('{"event_id":"e","type":"t","at":"2026-11-18T10:15:00Z","data":{"__proto__":{"polluted":true},"correspondence_id":"c"}}'),
    );
    expect(r.ok).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('never throws, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const r = parseEnvelope(bytes);
        expect(typeof r.eventId).toBe('string');
        expect(r.eventId.length).toBeGreaterThan(0);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (v) => {
        const r = parseEnvelope(enc(v));
        if (r.ok) expect(r.json).toBe(JSON.stringify(v));
      }),
      { numRuns: 2000 },
    );
  });
});
