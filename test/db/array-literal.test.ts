import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrayLiteral } from '../../src/db/array-literal.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

/**
 * The hot statements send their arrays as literals built by arrayLiteral, not as JS arrays for the
 * driver to encode. Postgres must read back exactly the values given, whatever the text holds: the
 * characters the literal syntax gives meaning to (quotes, backslashes, braces, commas, spaces), the
 * word NULL as text, empty strings, any Unicode. Postgres text cannot hold U+0000, so neither can
 * these; the driver refuses it too.
 */
const SYNTAX = ['"', '\\', '{', '}', ',', ' ', '\t', '\n', 'NULL', 'null', "'", '\\"', '""'];
const text = fc.oneof(
  fc.string({ unit: fc.constantFrom(...SYNTAX, 'a', 'é', '😀'), maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => s.split(String.fromCharCode(0)).join('')),
);

describe.each(kinds)('array literals (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind, { migrate: false });
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('text[]: reads back every string and null as given', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(text, { nil: null }), { maxLength: 8 }), async (values) => {
        const res = await store.db.query<{ a: Array<string | null> }>('SELECT $1::text[] AS a', [arrayLiteral(values)]);
        expect(res.rows[0]!.a).toEqual(values);
      }),
      { numRuns: 200 },
    );
  });

  it('int4[], int2[] and float8[]: reads back every number and null as given', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.integer({ min: -32768, max: 32767 }), { nil: null }), { maxLength: 6 }),
        fc.array(fc.option(fc.integer(), { nil: null }), { maxLength: 6 }),
        fc.array(fc.option(fc.double(), { nil: null }), { maxLength: 6 }),
        async (small, ints, floats) => {
          const res = await store.db.query<{ s: Array<number | null>; i: Array<number | null>; f: Array<number | string | null> }>(
            'SELECT $1::int2[] AS s, $2::int4[] AS i, $3::float8[] AS f',
            [arrayLiteral(small), arrayLiteral(ints), arrayLiteral(floats)],
          );
          expect(res.rows[0]!.s).toEqual(small);
          expect(res.rows[0]!.i).toEqual(ints);
          // -0 reads back as 0 through the driver; the value is the same.
          expect(res.rows[0]!.f.map((x) => (x === null ? null : Number(x)))).toEqual(floats.map((x) => (Object.is(x, -0) ? 0 : x)));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('bool[]: reads back every boolean and null as given', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(fc.boolean(), { nil: null }), { maxLength: 8 }), async (values) => {
        const res = await store.db.query<{ a: Array<boolean | null> }>('SELECT $1::bool[] AS a', [arrayLiteral(values)]);
        expect(res.rows[0]!.a).toEqual(values);
      }),
      { numRuns: 50 },
    );
  });

  it('timestamptz[]: the ISO strings events carry read back as the same instants', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.option(
            fc
              .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
              .map((d) => d.toISOString()),
            { nil: null },
          ),
          { maxLength: 6 },
        ),
        async (values) => {
          const res = await store.db.query<{ a: Array<string | null> }>(
            `SELECT array(SELECT to_char(x AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(x, n) ORDER BY n) AS a`,
            [arrayLiteral(values)],
          );
          expect(res.rows[0]!.a).toEqual(values);
        },
      ),
      { numRuns: 50 },
    );
  });
});
