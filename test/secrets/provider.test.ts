import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fixedClock } from '../../src/clock.js';
import { createPgDb } from '../../src/db/pg.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createSecretCipher } from '../../src/secrets/crypto.js';
import { createEndpointSecretProvider } from '../../src/secrets/provider.js';
import { saveEndpointSecret } from '../../src/secrets/store.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();
const HOUR = 3_600_000;

describe.each(kinds)('endpoint secret provider on %s', (kind) => {
  let store: TestStore;
  const cipher = createSecretCipher(randomBytes(32));

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('serves the configured secrets for /webhooks and for an endpoint with nothing stored', async () => {
    const provider = createEndpointSecretProvider({ db: store.db, cipher, configured: ['conf_a', 'conf_b'] });
    expect(await provider.secretsFor(undefined)).toEqual({ secrets: ['conf_a', 'conf_b'], labels: ['configured:0', 'configured:1'] });
    expect(await provider.secretsFor('ep_nothing_stored')).toEqual({
      secrets: ['conf_a', 'conf_b'],
      labels: ['configured:0', 'configured:1'],
    });
  });

  it("serves only the endpoint's own secrets once it has some, labelled by role", async () => {
    const clock = fixedClock(Date.parse('2026-11-18T10:00:00Z'));
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p1', secret: 'old', overlapSeconds: 60, now: new Date(clock.now()) });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p1', secret: 'new', overlapSeconds: 60, now: new Date(clock.now()) });
    const provider = createEndpointSecretProvider({ db: store.db, cipher, configured: ['conf'], clock });
    expect(await provider.secretsFor('ep_p1')).toEqual({
      secrets: ['new', 'old'],
      labels: ['endpoint:ep_p1:current', 'endpoint:ep_p1:previous'],
    });
  });

  it('drops the previous secret when its overlap ends, even from a fresh cache', async () => {
    const clock = fixedClock(Date.parse('2026-11-18T11:00:00Z'));
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p2', secret: 'old', overlapSeconds: 30, now: new Date(clock.now()) });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p2', secret: 'new', overlapSeconds: 30, now: new Date(clock.now()) });
    const provider = createEndpointSecretProvider({ db: store.db, cipher, configured: [], clock, cacheTtlMs: HOUR });
    expect((await provider.secretsFor('ep_p2')).secrets).toEqual(['new', 'old']);
    clock.advance(29_999);
    expect((await provider.secretsFor('ep_p2')).secrets).toEqual(['new', 'old']);
    clock.advance(1);
    expect((await provider.secretsFor('ep_p2')).secrets).toEqual(['new']);
  });

  it('without a notification, picks a change up when the cache TTL runs out', async () => {
    const clock = fixedClock(Date.parse('2026-11-18T12:00:00Z'));
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p3', secret: 'v1', overlapSeconds: 0, now: new Date(clock.now()) });
    // Not started: no LISTEN, so only the TTL can reveal the change.
    const provider = createEndpointSecretProvider({ db: store.db, cipher, configured: [], clock, cacheTtlMs: 5000 });
    expect((await provider.secretsFor('ep_p3')).secrets).toEqual(['v1']);
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p3', secret: 'v2', overlapSeconds: 0, now: new Date(clock.now()) });
    clock.advance(4999);
    expect((await provider.secretsFor('ep_p3')).secrets).toEqual(['v1']);
    clock.advance(1);
    expect((await provider.secretsFor('ep_p3')).secrets).toEqual(['v2']);
  });

  it('with LISTEN, sees a rotation at once although the cache would hold it for an hour', async () => {
    const provider = createEndpointSecretProvider({ db: store.db, cipher, configured: [], cacheTtlMs: HOUR });
    await provider.start();
    try {
      await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p4', secret: 'before', overlapSeconds: 600, now: new Date() });
      await vi.waitFor(async () => expect((await provider.secretsFor('ep_p4')).secrets).toEqual(['before']), {
        timeout: 5000,
        interval: 20,
      });
      await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p4', secret: 'after', overlapSeconds: 600, now: new Date() });
      await vi.waitFor(async () => expect((await provider.secretsFor('ep_p4')).secrets).toEqual(['after', 'before']), {
        timeout: 5000,
        interval: 20,
      });
    } finally {
      await provider.close();
    }
  });

  it('loads each endpoint once for a burst of concurrent requests', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_p5', secret: 's', overlapSeconds: 0, now: new Date() });
    let queries = 0;
    const counting = {
      ...store.db,
      query: (...args: Parameters<typeof store.db.query>) => (queries++, store.db.query(...args)),
    } as typeof store.db;
    const provider = createEndpointSecretProvider({ db: counting, cipher, configured: [], cacheTtlMs: HOUR });
    const sets = await Promise.all(Array.from({ length: 20 }, () => provider.secretsFor('ep_p5')));
    expect(sets.every((s) => s.secrets[0] === 's')).toBe(true);
    expect(queries).toBe(1);
  });
});

describe('endpoint secret provider when the store fails', () => {
  it('keeps verifying with what it had, and reports the store unavailable when it had nothing', async () => {
    const store = await openTestStore('pglite');
    const cipher = createSecretCipher(randomBytes(32));
    const clock = fixedClock(Date.now());
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_f1', secret: 'kept', overlapSeconds: 0, now: new Date(clock.now()) });
    const provider = createEndpointSecretProvider({
      db: store.db,
      cipher,
      configured: [],
      clock,
      cacheTtlMs: 1000,
      logger: silentLogger(),
    });
    expect((await provider.secretsFor('ep_f1')).secrets).toEqual(['kept']);
    await store.cleanup();
    clock.advance(5000);
    expect((await provider.secretsFor('ep_f1')).secrets).toEqual(['kept']);
    await expect(provider.secretsFor('ep_f2')).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe.runIf(kinds.includes('postgres'))('endpoint secret provider across replicas (Postgres)', () => {
  it('a rotation written by one process reaches every listening replica', async () => {
    const store = await openTestStore('postgres');
    const cipher = createSecretCipher(randomBytes(32));
    // Separate pools stand in for separate ingress processes.
    const replicas = [0, 1, 2].map(() => createPgDb({ url: store.url!, poolSize: 2, logger: silentLogger() }));
    const providers = replicas.map((db) => createEndpointSecretProvider({ db, cipher, configured: [], cacheTtlMs: HOUR }));
    try {
      await Promise.all(providers.map((p) => p.start()));
      await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_r1', secret: 'one', overlapSeconds: 600, now: new Date() });
      for (const p of providers)
        await vi.waitFor(async () => expect((await p.secretsFor('ep_r1')).secrets).toEqual(['one']), { timeout: 5000, interval: 20 });
      await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_r1', secret: 'two', overlapSeconds: 600, now: new Date() });
      for (const p of providers)
        await vi.waitFor(async () => expect((await p.secretsFor('ep_r1')).secrets).toEqual(['two', 'one']), {
          timeout: 5000,
          interval: 20,
        });
    } finally {
      for (const p of providers) await p.close();
      for (const db of replicas) await db.close();
      await store.cleanup();
    }
  });
});
