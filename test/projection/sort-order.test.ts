import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EARLIEST_CREATED, LATEST, LATEST_ACT, RANKED, orderBy, sortsBefore, type SortOrder } from '../../src/projection/sort-order.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

/**
 * The upserts choose between a stored fact and an incoming one with
 * sortsBefore, and reduce a batch with ORDER BY. Both must agree with
 * Postgres's own ORDER BY on every input, NULLs and ties included: here
 * Postgres sorts the two rows, once with ties broken each way, and says which
 * comes first or that they tie.
 */
interface Row {
  rank: number | null;
  at: string | null;
  id: string | null;
  created_at: string | null;
  reread: boolean | null;
}

// Few distinct values, so ties and NULLs are common; ids whose bytewise and
// linguistic orders differ (case, a non-ASCII letter).
const row: fc.Arbitrary<Row> = fc.record({
  rank: fc.option(fc.integer({ min: -1, max: 2 }), { nil: null }),
  at: fc.option(fc.constantFrom('2026-11-20T10:00:00Z', '2026-11-20T10:00:00.001Z', '2026-11-21T00:00:00Z'), { nil: null }),
  id: fc.option(fc.constantFrom('evt_a', 'evt_B', 'evt_b', 'Evt_a', 'evt_ä'), { nil: null }),
  created_at: fc.option(fc.constantFrom('2026-11-19T00:00:00Z', '2026-11-20T00:00:00Z'), { nil: null }),
  reread: fc.option(fc.boolean(), { nil: null }),
});

const ORDERS: Array<[string, SortOrder]> = [
  ['ranked', RANKED('rank', 'at', 'id')],
  ['latest', LATEST('at', 'id')],
  ['latest act', LATEST_ACT('at', 'reread', 'id')],
  ['earliest created', EARLIEST_CREATED],
];

/** The ids carry `collation` (a linguistic one where the database has it), so a comparison that forgot to be bytewise shows. */
const values = (first: number, collation: string | undefined): string =>
  `SELECT $${first}::int2 AS rank, $${first + 1}::timestamptz AS at, $${first + 2}::text${collation ? ` COLLATE "${collation}"` : ''} AS id,
          $${first + 3}::timestamptz AS created_at, $${first + 4}::bool AS reread`;

describe.each(kinds)('projection sort orders (%s)', (kind) => {
  let store: TestStore;
  let collation: string | undefined;
  beforeAll(async () => {
    store = await openTestStore(kind, { migrate: false });
    const c = await store.db.query<{ collname: string }>(`SELECT collname FROM pg_collation WHERE collname = 'und-x-icu'`);
    collation = c.rows[0]?.collname;
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it.each(ORDERS)('%s: sortsBefore agrees with ORDER BY on any two rows, NULLs and ties included', async (_, order) => {
    const sql = `
      SELECT ${sortsBefore(order, 'a', 'b')} AS a_first, ${sortsBefore(order, 'b', 'a')} AS b_first,
        (SELECT v.tag FROM (SELECT 'a' AS tag, a.* UNION ALL SELECT 'b', b.*) v ORDER BY ${orderBy(order)}, v.tag ASC LIMIT 1) AS first_ties_a,
        (SELECT v.tag FROM (SELECT 'a' AS tag, a.* UNION ALL SELECT 'b', b.*) v ORDER BY ${orderBy(order)}, v.tag DESC LIMIT 1) AS first_ties_b
      FROM (${values(1, collation)}) a, (${values(6, collation)}) b`;
    await fc.assert(
      fc.asyncProperty(row, row, async (a, b) => {
        const res = await store.db.query<{ a_first: boolean; b_first: boolean; first_ties_a: string; first_ties_b: string }>(sql, [
          a.rank,
          a.at,
          a.id,
          a.created_at,
          a.reread,
          b.rank,
          b.at,
          b.id,
          b.created_at,
          b.reread,
        ]);
        const r = res.rows[0]!;
        const tie = r.first_ties_a !== r.first_ties_b;
        expect({ a_first: r.a_first, b_first: r.b_first }).toEqual({
          a_first: !tie && r.first_ties_a === 'a',
          b_first: !tie && r.first_ties_a === 'b',
        });
      }),
      { numRuns: kind === 'pglite' ? 150 : 300 },
    );
  });
});
