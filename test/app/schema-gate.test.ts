import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchemaGate } from '../../src/app/schema-gate.js';
import { migrate, migrationStatus } from '../../src/db/migrate.js';
import { silentLogger } from '../../src/logging/logger.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { migrationsBefore } from '../support/migrations.js';

const kinds = await availableStoreKinds();

describe.each(kinds)('schema gate for serve --no-migrate (%s)', (kind) => {
  let store: TestStore;
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    store = await openTestStore(kind, { migrate: false });
    await migrate(store.db, { dir: migrationsBefore(11, cleanups) });
  });
  afterAll(async () => {
    for (const c of cleanups) await c();
    await store?.cleanup();
  });

  it('never starts what waits when stopped first, and says what is pending meanwhile', async () => {
    let started = 0;
    const gate = createSchemaGate({ db: store.db, logger: silentLogger(), intervalMs: 10, start: async () => void started++ });
    await new Promise((r) => setTimeout(r, 100));
    expect(gate.state()).toMatchObject({ ok: false });
    expect(gate.state().detail).toMatch(/011_participant_act_reread.*postroom migrate/);
    gate.stop();
    await gate.done;
    expect(started).toBe(0);
  });

  it('names what is pending from the moment it exists, before its own first check of the store', async () => {
    const { pending } = await migrationStatus(store.db);
    // A long interval and no await: what /readyz would answer to a probe that comes at once.
    const gate = createSchemaGate({ db: store.db, logger: silentLogger(), intervalMs: 60_000, start: async () => undefined, pending });
    expect(gate.state()).toMatchObject({ ok: false });
    expect(gate.state().detail).toMatch(/011_participant_act_reread.*postroom migrate/);
    gate.stop();
    await gate.done;
  });

  it('reports a start that failed once the schema is current, and starts only once', async () => {
    let calls = 0;
    const gate = createSchemaGate({
      db: store.db,
      logger: silentLogger(),
      intervalMs: 10,
      start: async () => {
        calls++;
        throw new Error('the worker could not open its connection');
      },
    });
    // Watched before the schema becomes current: the gate may start, and fail, before migrate() returns, and a
    // rejection nobody handles yet fails the run (vitest: "Unhandled Rejection", seen in CI on Node 24).
    const failed = expect(gate.done).rejects.toThrow('could not open');
    await migrate(store.db);
    await failed;
    expect(calls).toBe(1);
    expect(gate.state()).toEqual({ ok: false, detail: 'starting after migrations failed: the worker could not open its connection' });
    gate.stop();
  });
});
