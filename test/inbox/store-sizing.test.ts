import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { storeSizing } from '../../src/inbox/count-queries.js';
import { availableStoreKinds, openTestStore } from '../support/db.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The sizing gauges report only what the store has: no event-id index yet, no figures (not a zero that reads as "fits"). */
describe.each(await availableStoreKinds())('store sizing on %s', (kind) => {
  it('is absent before the inbox exists, and the index and buffer sizes once it does', async () => {
    const store = await openTestStore(kind, { migrate: false });
    cleanups.push(store.cleanup);
    expect(await storeSizing(store.db)).toBeUndefined();
    await migrate(store.db);
    const sizing = await storeSizing(store.db);
    expect(sizing?.indexBytes).toBeGreaterThan(0);
    expect(sizing?.sharedBuffersBytes).toBeGreaterThanOrEqual(128 * 1024);
  });
});
