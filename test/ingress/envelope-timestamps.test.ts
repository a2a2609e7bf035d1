import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStorableTimestamp, parseEnvelope } from '../../src/ingress/envelope.js';
import { adminUrl } from '../support/db.js';

/**
 * The envelope check decides, per event, whether `at` is a timestamp Postgres will
 * store; the answer to the sender depends on it. So it is checked against Postgres
 * itself: every `at` it accepts, timestamptz accepts as the same instant, and every
 * ordinary-looking one Postgres accepts (seconds up to 59, hours up to 23; Postgres
 * also takes 24:00:00 and leap seconds, which we quarantine) it accepts too.
 */
const url = await adminUrl();

const pad = (n: number, width: number): string => String(n).padStart(width, '0');
const timestamp = fc
  .record({
    year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(1, 4, 100, 400, 1600, 1900, 2000, 2024, 2100, 9996)),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.oneof(fc.integer({ min: 0, max: 32 }), fc.constantFrom(28, 29, 30, 31)),
    hour: fc.integer({ min: 0, max: 25 }),
    minute: fc.integer({ min: 0, max: 60 }),
    second: fc.integer({ min: 0, max: 60 }),
    fraction: fc.constantFrom('', '.5', '.123', '.999999', '.123456789'),
    zone: fc.oneof(
      fc.constant('Z'),
      fc
        .record({ sign: fc.constantFrom('+', '-'), h: fc.integer({ min: 0, max: 16 }), m: fc.integer({ min: 0, max: 60 }) })
        .map(({ sign, h, m }) => `${sign}${pad(h, 2)}:${pad(m, 2)}`),
    ),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.fraction}${t.zone}`,
  );

const envelopeAt = (at: string): boolean => parseEnvelope(Buffer.from(JSON.stringify({ event_id: 'evt_1', type: 't', at, data: {} }))).ok;

describe.skipIf(!url)('the envelope timestamp check agrees with Postgres timestamptz', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`
      CREATE FUNCTION pg_temp.epoch_or_null(t text) RETURNS double precision LANGUAGE plpgsql AS $$
      BEGIN
        RETURN extract(epoch FROM t::timestamptz);
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END $$`);
  });
  afterAll(async () => {
    await client?.end();
  });

  it('on thousands of generated timestamps, valid and not, with century and leap years', async () => {
    const samples = fc.sample(timestamp, { numRuns: 20_000, seed: 20261124 });
    const { rows } = await client.query<{ t: string; epoch: number | null }>(
      'SELECT t, pg_temp.epoch_or_null(t) AS epoch FROM unnest($1::text[]) AS t',
      [samples],
    );
    let accepted = 0;
    const disagreements: string[] = [];
    for (const { t, epoch } of rows) {
      const ours = envelopeAt(t);
      if (ours) accepted++;
      if (ours && (epoch === null || Math.abs(epoch * 1000 - Date.parse(t)) > 1)) disagreements.push(`${t}: we accept, Postgres ${epoch}`);
      const ordinary = Number(t.slice(11, 13)) <= 23 && Number(t.slice(17, 19)) <= 59;
      if (!ours && epoch !== null && ordinary) disagreements.push(`${t}: Postgres accepts, we quarantine`);
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
    // The generator must reach both sides, or the agreement says nothing.
    expect(accepted).toBeGreaterThan(1000);
    expect(rows.length - accepted).toBeGreaterThan(1000);
  });
});

/**
 * The check reads the text a character at a time; this pattern, checking the same ranges, is the reference it
 * is compared with: the two must agree on any text, most of all on near misses of the shape
 * (a character added, dropped or changed; other scripts' digits, which \d does not match).
 */
const SHAPE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
function byPattern(at: string): boolean {
  const m = SHAPE.exec(at);
  if (m === null) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS[month - 1]!)) return false;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 59) return false;
  return !(m[9] !== undefined && (Number(m[9]) > 15 || Number(m[10]) > 59));
}

const ALPHABET = ['0', '1', '2', '5', '9', '-', ':', 'T', 't', 'Z', 'z', '+', '.', ' ', 'x', '\u0663', '\uff10', '\n'];
const edit = fc.oneof(
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), ch: fc.constantFrom(...ALPHABET) }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), ch: fc.constant('') }),
  fc.record({ op: fc.constant('replace' as const), at: fc.nat(), ch: fc.constantFrom(...ALPHABET) }),
);
const nearMiss = fc.tuple(timestamp, fc.array(edit, { maxLength: 3 })).map(([t, edits]) =>
  edits.reduce((s, { op, at, ch }) => {
    const i = s.length === 0 ? 0 : at % (s.length + (op === 'insert' ? 1 : 0));
    return s.slice(0, i) + ch + s.slice(op === 'insert' ? i : i + 1);
  }, t),
);

describe('the character-at-a-time timestamp check', () => {
  it('agrees with the pattern it replaced on timestamps and their near misses', () => {
    fc.assert(
      fc.property(fc.oneof(timestamp, nearMiss, fc.string({ maxLength: 40 })), (at) => {
        expect(isStorableTimestamp(at)).toBe(byPattern(at));
      }),
      { numRuns: 20_000, seed: 20261127 },
    );
  });

  it('reaches both answers, and the fraction and offset limits', () => {
    const valid = '2026-11-27T18:20:00Z';
    expect(isStorableTimestamp(valid)).toBe(true);
    expect(isStorableTimestamp('2026-11-27T18:20:00.123456789+15:59')).toBe(true);
    expect(isStorableTimestamp('2026-11-27T18:20:00.1234567890Z')).toBe(false);
    expect(isStorableTimestamp('2026-11-27T18:20:00.Z')).toBe(false);
    expect(isStorableTimestamp('2026-11-27T18:20:00+16:00')).toBe(false);
    expect(isStorableTimestamp('2026-11-27T18:20:00+05:00x')).toBe(false);
    expect(isStorableTimestamp('2024-02-29T00:00:00Z')).toBe(true);
    expect(isStorableTimestamp('2100-02-29T00:00:00Z')).toBe(false);
    expect(isStorableTimestamp(`${valid} `)).toBe(false);
  });
});
