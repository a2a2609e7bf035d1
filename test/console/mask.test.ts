import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MASK, isPersonalKey, maskText, maskValue } from '../../src/console/mask.js';

describe('masking personal data', () => {
  it('masks by key anywhere in an envelope, keeping its shape', () => {
    const masked = maskValue({
      event_id: 'evt_1',
      data: {
        correspondence_id: 'cor_1',
        participants: [
          { participant_id: 'p1', display_name: 'Kari Nordmann', addressing: { type: 'nin', nin: '01019012345' }, ref: 'r-1' },
          { participant_id: 'p2', 'First-Name': 'Ola', LastName: 'N', addressing: { type: 'claim_code', name: 'Ola N' } },
        ],
        recipient: { email: 'kari@example.no', phone: 4712345678 },
      },
    });
    expect(masked).toEqual({
      event_id: 'evt_1',
      data: {
        correspondence_id: 'cor_1',
        participants: [
          { participant_id: 'p1', display_name: MASK.value, addressing: { type: 'nin', nin: MASK.value }, ref: 'r-1' },
          { participant_id: 'p2', 'First-Name': MASK.value, LastName: MASK.value, addressing: { type: 'claim_code', name: MASK.value } },
        ],
        recipient: { email: MASK.value, phone: MASK.value },
      },
    });
  });

  it('masks NINs and e-mail addresses by shape in any string, keys included', () => {
    expect(maskText('refused 01019012345 for kari.nordmann+x@example.co.uk; order 123456789012 stays')).toBe(
      'refused [nin] for [e-mail]; order 123456789012 stays',
    );
    expect(maskValue({ 'kari@example.no': 'x', note: ['id 01019012345'] })).toEqual({ '[e-mail]': 'x', note: ['id [nin]'] });
    expect(isPersonalKey('Display Name')).toBe(true);
    expect(isPersonalKey('participant_id')).toBe(false);
  });

  it('never lets a value under a personal key, an eleven-digit number or an address through, however nested', () => {
    const personal = fc.constantFrom('name', 'display_name', 'first_name', 'last_name', 'full_name', 'nin', 'email', 'addressing');
    const secret = fc.oneof(
      fc.stringMatching(/^\d{11}$/),
      fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[a-z]{1,8}$/)).map(([a, b]) => `${a}@${b}.no`),
    );
    const leaf = fc.oneof(
      fc.string(),
      fc.integer(),
      secret.map((s) => `see ${s} here`),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), personal), tie('node'), { maxKeys: 4 }),
        fc.record({ key: personal, value: fc.oneof(fc.string({ minLength: 1 }), secret, fc.integer()) }).map((r) => ({ [r.key]: r.value })),
      ),
    })).node;
    fc.assert(
      fc.property(tree, (value) => {
        const out = JSON.stringify(maskValue(value));
        expect(out).not.toMatch(/(?<!\d)\d{11}(?!\d)/);
        expect(out).not.toMatch(/[a-z]+@[a-z]+\.no/);
        const walk = (v: unknown): void => {
          if (v === null || typeof v !== 'object') return;
          for (const [k, child] of Object.entries(v)) {
            if (isPersonalKey(k) && (typeof child === 'string' || typeof child === 'number')) expect(child).toBe(MASK.value);
            walk(child);
          }
        };
        walk(maskValue(value));
      }),
      { numRuns: 300 },
    );
  });
});
