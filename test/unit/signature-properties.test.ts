import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseSignatureHeader, sign, verifySignature } from '../../src/signature/index.js';

const now = 1_795_000_000;

describe('signature properties', () => {
  it('verifies what sign() produces, for any body, secret and scheme', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 2048 }),
        fc.string({ minLength: 1, maxLength: 64 }),
        fc.constantFrom('body' as const, 'timestamp.body' as const),
        fc.integer({ min: -300, max: 300 }),
        (body, secret, scheme, skew) => {
          const header = sign({ secret, body, timestamp: now - skew, scheme });
          const r = verifySignature({ header, body, secrets: [secret], now, toleranceSeconds: 300, scheme });
          expect(r).toEqual({ ok: true, secretIndex: 0, timestamp: now - skew, skewSeconds: skew });
        },
      ),
    );
  });

  it('rejects any change of one byte of the body', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 512 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (body, at, flip) => {
        const header = sign({ secret: 's', body, timestamp: now });
        const altered = Uint8Array.from(body);
        const i = at % altered.length;
        altered[i] = altered[i]! ^ flip;
        expect(verifySignature({ header, body: altered, secrets: ['s'], now, toleranceSeconds: 300 })).toMatchObject({
          ok: false,
          reason: 'no_matching_signature',
        });
      }),
    );
  });

  it('never throws and never accepts arbitrary headers', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.uint8Array({ maxLength: 64 }), (header, body) => {
        const r = verifySignature({ header, body, secrets: ['s1', 's2'], now, toleranceSeconds: 300 });
        expect(r.ok).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });

  it('reads the canonical header (one t, one v1) exactly as the general parser does, and near misses too', () => {
    // A leading space never reaches the one-match path for t=…,v1=…: the general parser reads it after its trim.
    const piece = fc.oneof(
      fc.constantFrom('t=', 'v1=', ',', ' ', '=', 'v0=', 'T=', '\t', ''),
      fc.stringMatching(/^[0-9]{0,14}$/),
      fc.stringMatching(/^[0-9a-fA-F]{0,66}$/),
      fc.string({ maxLength: 4 }),
    );
    const canonical = fc.tuple(fc.stringMatching(/^[0-9]{1,13}$/), fc.stringMatching(/^[0-9a-f]{64}$/)).map(([t, v]) => `t=${t},v1=${v}`);
    fc.assert(
      fc.property(
        fc.oneof(
          canonical,
          fc.array(piece, { maxLength: 8 }).map((p) => p.join('')),
        ),
        (header) => {
          expect(parseSignatureHeader(header)).toEqual(parseSignatureHeader(` ${header}`));
        },
      ),
      { numRuns: 2000 },
    );
    expect(parseSignatureHeader(`t=${now},v1=${'ab'.repeat(32)}`)).toEqual({ ok: true, timestamp: now, v1: ['ab'.repeat(32)] });
  });

  it('refuses headers with too many items or repeated header lines', () => {
    const many = `t=${now},${Array.from({ length: 40 }, () => 'v1=00').join(',')}`;
    expect(parseSignatureHeader(many)).toEqual({ ok: false, reason: 'malformed_header' });
    expect(parseSignatureHeader([`t=${now},v1=aa`, `t=${now},v1=bb`])).toEqual({ ok: false, reason: 'malformed_header' });
    expect(parseSignatureHeader('x'.repeat(10_000))).toEqual({ ok: false, reason: 'malformed_header' });
  });
});
