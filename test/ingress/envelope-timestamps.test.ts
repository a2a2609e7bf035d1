import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnvelope } from '../../src/ingress/envelope.js';
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
