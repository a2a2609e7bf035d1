import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretCipher } from '../../src/secrets/crypto.js';
import {
  describeEndpointSecrets,
  listKnownEndpoints,
  loadEndpointSecrets,
  pruneExpiredSecrets,
  recordEndpoint,
  retireEndpoint,
  saveEndpointSecret,
  updateKnownEndpoint,
} from '../../src/secrets/store.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';

const kinds = await availableStoreKinds();

describe.each(kinds)('endpoint secret store on %s', (kind) => {
  let store: TestStore;
  const cipher = createSecretCipher(randomBytes(32));
  const t0 = new Date('2026-11-18T10:00:00.000Z');
  const at = (seconds: number): Date => new Date(t0.getTime() + seconds * 1000);

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('stores a secret encrypted and loads it back as the current one', async () => {
    await saveEndpointSecret(store.db, cipher, {
      endpointId: 'ep_store_1',
      secret: 'whsec_first',
      overlapSeconds: 60,
      now: t0,
      endpoint: { url: 'https://example.com/hook', events: ['participant.acted'], plane: 'sandbox', created_at: t0.toISOString() },
    });
    const raw = await store.db.query<{ ciphertext: Uint8Array }>(
      `SELECT ciphertext FROM endpoint_secrets WHERE endpoint_id = 'ep_store_1'`,
    );
    expect(Buffer.from(raw.rows[0]!.ciphertext).toString('utf8')).not.toContain('whsec_first');
    const loaded = await loadEndpointSecrets(store.db, cipher, 'ep_store_1', t0);
    expect(loaded.map((s) => [s.state, s.secret])).toEqual([['current', 'whsec_first']]);
    const known = await listKnownEndpoints(store.db);
    expect(known.find((e) => e.endpoint_id === 'ep_store_1')).toMatchObject({
      url: 'https://example.com/hook',
      events: ['participant.acted'],
      plane: 'sandbox',
      active: true,
    });
  });

  it('keeps the replaced secret for the overlap, then drops it', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_2', secret: 'whsec_a', overlapSeconds: 60, now: t0 });
    const { replaced } = await saveEndpointSecret(store.db, cipher, {
      endpointId: 'ep_store_2',
      secret: 'whsec_b',
      overlapSeconds: 60,
      now: at(10),
    });
    expect(replaced).toBe(1);
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_2', at(10))).map((s) => [s.state, s.secret])).toEqual([
      ['current', 'whsec_b'],
      ['previous', 'whsec_a'],
    ]);
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_2', at(69))).map((s) => s.secret)).toEqual(['whsec_b', 'whsec_a']);
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_2', at(70))).map((s) => s.secret)).toEqual(['whsec_b']);
  });

  it('rotating twice within the overlap keeps both older secrets until each expires', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_3', secret: 's1', overlapSeconds: 100, now: t0 });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_3', secret: 's2', overlapSeconds: 100, now: at(10) });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_3', secret: 's3', overlapSeconds: 100, now: at(20) });
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_3', at(20))).map((s) => s.secret)).toEqual(['s3', 's2', 's1']);
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_3', at(111))).map((s) => s.secret)).toEqual(['s3', 's2']);
    const info = await describeEndpointSecrets(store.db, 'ep_store_3');
    expect(info.map((i) => i.state)).toEqual(['current', 'previous', 'previous']);
    expect(JSON.stringify(info)).not.toMatch(/"s[123]"/);
  });

  it('with no overlap the replaced secret stops at once, and expired rows are pruned on the next save', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_4', secret: 'old', overlapSeconds: 0, now: t0 });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_4', secret: 'new', overlapSeconds: 0, now: at(1) });
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_4', at(1))).map((s) => s.secret)).toEqual(['new']);
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_4', secret: 'newer', overlapSeconds: 0, now: at(2) });
    // 'old' expired at t0+1 and was deleted; 'new' expires exactly now and is deleted too.
    expect((await describeEndpointSecrets(store.db, 'ep_store_4')).map((i) => i.state)).toEqual(['current']);
  });

  it('a rotation with no overlap (after a leak) expires every older secret, not only the one it replaces', async () => {
    const day = 86_400;
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_leak', secret: 'first', overlapSeconds: day, now: t0 });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_leak', secret: 'second', overlapSeconds: day, now: at(60) });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_leak', secret: 'third', overlapSeconds: 0, now: at(120) });
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_leak', at(120))).map((s) => s.secret)).toEqual(['third']);
    // A later routine rotation never lengthens an older secret's life either.
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_leak', secret: 'fourth', overlapSeconds: 100, now: at(130) });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_leak', secret: 'fifth', overlapSeconds: day, now: at(140) });
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_leak', at(229))).map((s) => s.secret)).toEqual([
      'fifth',
      'fourth',
      'third',
    ]);
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_leak', at(231))).map((s) => s.secret)).toEqual(['fifth', 'fourth']);
  });

  it('prunes expired secrets everywhere', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_5', secret: 'a', overlapSeconds: 5, now: t0 });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_5', secret: 'b', overlapSeconds: 5, now: t0 });
    expect(await pruneExpiredSecrets(store.db, at(4))).toBe(0);
    expect(await pruneExpiredSecrets(store.db, at(6))).toBeGreaterThanOrEqual(1);
    expect((await describeEndpointSecrets(store.db, 'ep_store_5')).map((i) => i.state)).toEqual(['current']);
  });

  it('a ciphertext copied onto another endpoint does not verify', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_6', secret: 'mine', overlapSeconds: 0, now: t0 });
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_7', secret: 'theirs', overlapSeconds: 0, now: t0 });
    await store.db.query(
      `UPDATE endpoint_secrets SET ciphertext = s.ciphertext, nonce = s.nonce, auth_tag = s.auth_tag
         FROM (SELECT ciphertext, nonce, auth_tag FROM endpoint_secrets WHERE endpoint_id = 'ep_store_6') s
        WHERE endpoint_secrets.endpoint_id = 'ep_store_7'`,
    );
    await expect(loadEndpointSecrets(store.db, cipher, 'ep_store_7', t0)).rejects.toThrow(/failed authentication/);
  });

  it('only one current secret per endpoint, enforced by the schema', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_8', secret: 'x', overlapSeconds: 0, now: t0 });
    await expect(
      store.db.query(
        `INSERT INTO endpoint_secrets (endpoint_id, state, ciphertext, nonce, auth_tag, key_id, version) VALUES ('ep_store_8', 'current', '\\x00', '\\x00', '\\x00', 'k', 1)`,
      ),
    ).rejects.toThrow();
  });

  it('retiring an endpoint hides it from the known list and lets its secret run out after the overlap', async () => {
    await saveEndpointSecret(store.db, cipher, {
      endpointId: 'ep_store_9',
      secret: 'bye',
      overlapSeconds: 30,
      now: t0,
      endpoint: { url: 'https://example.com/9', events: [] },
    });
    await retireEndpoint(store.db, { endpointId: 'ep_store_9', overlapSeconds: 30, now: t0 });
    expect((await listKnownEndpoints(store.db)).some((e) => e.endpoint_id === 'ep_store_9')).toBe(false);
    expect(
      (await listKnownEndpoints(store.db, { includeDeleted: true })).find((e) => e.endpoint_id === 'ep_store_9')?.deleted_at,
    ).toBeInstanceOf(Date);
    expect((await loadEndpointSecrets(store.db, cipher, 'ep_store_9', at(29))).map((s) => [s.state, s.secret])).toEqual([
      ['previous', 'bye'],
    ]);
    expect(await loadEndpointSecrets(store.db, cipher, 'ep_store_9', at(30))).toEqual([]);
  });

  it('records and updates endpoint details without losing what it already knew', async () => {
    await recordEndpoint(store.db, { endpoint_id: 'ep_store_10', url: 'https://a.example/h', events: ['claim.claimed'] });
    await recordEndpoint(store.db, { endpoint_id: 'ep_store_10' });
    expect(await updateKnownEndpoint(store.db, 'ep_store_10', { events: ['claim.expired'] })).toBe(true);
    expect(await updateKnownEndpoint(store.db, 'ep_unknown', { url: 'https://x.example' })).toBe(false);
    const e = (await listKnownEndpoints(store.db)).find((x) => x.endpoint_id === 'ep_store_10');
    expect(e).toMatchObject({ url: 'https://a.example/h', events: ['claim.expired'] });
  });

  it('concurrent rotations of one endpoint leave exactly one current secret', async () => {
    await saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_11', secret: 'base', overlapSeconds: 60, now: t0 });
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        saveEndpointSecret(store.db, cipher, { endpointId: 'ep_store_11', secret: `r${i}`, overlapSeconds: 60, now: at(1) }),
      ),
    );
    const info = await describeEndpointSecrets(store.db, 'ep_store_11');
    expect(info.filter((i) => i.state === 'current')).toHaveLength(1);
    expect(info).toHaveLength(6);
  });
});
