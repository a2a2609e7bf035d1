import { afterAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import type { Db } from '../../src/db/types.js';
import { claimBatch } from '../../src/worker/claim-queries.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';
import { envelope, insertEnvelopes } from './support.js';

/**
 * The claim's commit does not wait for the disk (claim-queries.ts); everything
 * that must be durable still does: the batch's outcomes, and anything else the
 * connection runs after the claim.
 */

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const acted = (cid: string, second: number) =>
  envelope(
    'participant.acted',
    { correspondence_id: cid, participant_id: 'p', act: 'read', ref: 'r' },
    new Date(Date.UTC(2026, 0, 1, 0, 0, second)),
  );

const setting = 'SELECT current_setting($1) AS value';

describe.each(await availableStoreKinds())('how durable a claim is (%s)', (kind) => {
  it('commits the claim without waiting for the disk, and only the claim', async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    await insertEnvelopes(store.db, [acted('cor_a', 0)]);

    // The claim's own transaction, as Postgres sees it just before its commit.
    const inClaim: string[] = [];
    const observed: Pick<Db, 'transaction'> = {
      transaction: (fn) =>
        store.db.transaction(async (tx) => {
          const result = await fn(tx);
          inClaim.push((await tx.query<{ value: string }>(setting, ['synchronous_commit'])).rows[0]!.value);
          return result;
        }),
    };
    const claim = await claimBatch(observed, { workerId: 'w1', limit: 10, orderingHoldSeconds: 300 });
    expect(claim?.events).toHaveLength(1);
    expect(inClaim).toEqual(['off']);
    // SET LOCAL: the connection is back to the server's setting once the claim has committed.
    const after = await store.db.query<{ value: string }>(setting, ['synchronous_commit']);
    expect(after.rows[0]!.value).toBe('on');
  });

  it("commits a batch's outcomes, and its handlers' writes, waiting for the disk", async () => {
    const store = await openTestStore(kind);
    cleanups.push(store.cleanup);
    await insertEnvelopes(store.db, [acted('cor_b', 1), acted('cor_c', 2)]);
    const postroom = createPostroom({ db: store.db, worker: { listen: false, pollIntervalMs: 50 } });
    const inBatch: string[] = [];
    postroom.on('participant.acted', async (_event, ctx) => {
      inBatch.push((await ctx.tx.query<{ value: string }>(setting, ['synchronous_commit'])).rows[0]!.value);
    });
    expect((await postroom.drain()).by_status).toEqual({ processed: 2 });
    expect(inBatch).toEqual(['on', 'on']);
  });
});
