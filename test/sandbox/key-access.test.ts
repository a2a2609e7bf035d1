import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, type Sandbox, type Scope } from '../../src/sandbox/index.js';
import { call, sandbox } from './helpers.js';

// The spec: key list, read and revoke "exist … and none widens access"; the key sent selects the plane.
const ADMIN = 'svc_sandbox_admin';
const ADMIN_SCOPES: Scope[] = ['apikeys.read', 'apikeys.write'];
const PEER = 'svc_sandbox_peer';
const FULL = 'svc_sandbox_full';
const LIVE_FULL = 'svc_live_full';
const LIVE_ADMIN = 'svc_live_admin';

type KeyView = { key_id: string; prefix: string; plane: string; scopes: string[] };

let sb: Sandbox;
/** key id by the first characters of the secret, as an all-seeing key of each plane lists them. */
let idOf: Record<string, string>;

const me = (key: string) => call(sb.url, 'GET', '/sender/v2/me', { key });
const list = async (key: string): Promise<KeyView[]> => (await call(sb.url, 'GET', '/sender/v2/api-keys', { key })).body.api_keys;

beforeAll(async () => {
  sb = await sandbox({
    keys: [
      { key: ADMIN, scopes: ADMIN_SCOPES },
      { key: PEER, scopes: ['apikeys.read'] },
      FULL,
      LIVE_FULL,
      { key: LIVE_ADMIN, scopes: ADMIN_SCOPES },
    ],
  });
  idOf = {};
  for (const k of [...(await list(FULL)), ...(await list(LIVE_FULL))]) idOf[k.prefix] = k.key_id;
});
afterAll(() => sb.close());

const id = (secret: string): string => idOf[secret.slice(0, secret.startsWith('svc_live_') ? 13 : 16)]!;

describe('a narrow key does not reach wider keys', () => {
  it('lists only keys of its own plane whose scopes it holds itself', async () => {
    const seen = await list(ADMIN);
    expect(seen.map((k) => k.key_id).sort()).toEqual([id(ADMIN), id(PEER)].sort());
    for (const k of seen) {
      expect(k.plane).toBe('sandbox');
      expect(k.scopes.every((s) => ADMIN_SCOPES.includes(s as Scope))).toBe(true);
    }
  });

  it('cannot read, rotate or revoke a full-scope key: 403 naming a scope it lacks, and the key keeps working', async () => {
    const read = await call(sb.url, 'GET', `/sender/v2/api-keys/${id(FULL)}`, { key: ADMIN });
    expect(read.status).toBe(403);
    expect(read.body.error.code).toBe('insufficient_scope');
    expect(ADMIN_SCOPES).not.toContain(read.body.error.required_scope);

    const rotate = await call(sb.url, 'POST', `/sender/v2/api-keys/${id(FULL)}/rotate`, { key: ADMIN, body: { grace_seconds: 0 } });
    expect(rotate.status).toBe(403);
    expect(rotate.body.error.code).toBe('insufficient_scope');
    expect(JSON.stringify(rotate.body)).not.toMatch(/svc_sandbox_[0-9a-f]{8}/);

    const revoke = await call(sb.url, 'DELETE', `/sender/v2/api-keys/${id(FULL)}`, { key: ADMIN });
    expect(revoke.status).toBe(403);
    expect((await me(FULL)).status).toBe(200);
  });

  it('may rotate a key whose scopes it holds, and gets a secret of its own plane with those scopes', async () => {
    const rotated = await call(sb.url, 'POST', `/sender/v2/api-keys/${id(PEER)}/rotate`, { key: ADMIN, body: { grace_seconds: 3600 } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^svc_sandbox_/);
    expect((await me(rotated.body.secret)).body.scopes).toEqual(['apikeys.read']);
  });
});

describe('a key never reaches a key of the other plane', () => {
  it('a sandbox key with every scope neither lists, reads, rotates nor revokes a live key (404), and the reverse', async () => {
    for (const [caller, target] of [
      [FULL, LIVE_ADMIN],
      [LIVE_FULL, ADMIN],
    ] as const) {
      const callerPlane = caller.startsWith('svc_live_') ? 'live' : 'sandbox';
      expect((await list(caller)).every((k) => k.plane === callerPlane)).toBe(true);
      expect((await call(sb.url, 'GET', `/sender/v2/api-keys/${id(target)}`, { key: caller })).status).toBe(404);
      const rotate = await call(sb.url, 'POST', `/sender/v2/api-keys/${id(target)}/rotate`, { key: caller, body: { grace_seconds: 0 } });
      expect(rotate.status).toBe(404);
      expect(rotate.body).not.toHaveProperty('secret');
      expect((await call(sb.url, 'DELETE', `/sender/v2/api-keys/${id(target)}`, { key: caller })).status).toBe(404);
      expect((await me(target)).status).toBe(200);
    }
  });
});

describe('property: no rotate hands out more than the caller holds', () => {
  const scopeSet = fc.subarray([...SCOPES], { minLength: 1 });
  it('for any caller and target scopes and planes, a secret obtained by rotation carries only the caller’s scopes and plane; a refused rotation changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        scopeSet,
        scopeSet,
        fc.constantFrom('sandbox', 'live'),
        fc.constantFrom('sandbox', 'live'),
        fc.boolean(),
        async (callerScopes, targetScopes, callerPlane, targetPlane, grantAdmin) => {
          const caller = `svc_${callerPlane}_caller`;
          const target = `svc_${targetPlane}_target`;
          const observer = `svc_${targetPlane}_observer`;
          const held = grantAdmin ? [...new Set<Scope>([...callerScopes, 'apikeys.read', 'apikeys.write'])] : callerScopes;
          const s = await sandbox({ keys: [{ key: caller, scopes: held }, { key: target, scopes: targetScopes }, observer] });
          try {
            const targetId = (await call(s.url, 'GET', '/sender/v2/api-keys', { key: observer })).body.api_keys.find((k: KeyView) =>
              target.startsWith(k.prefix),
            ).key_id;
            const read = await call(s.url, 'GET', `/sender/v2/api-keys/${targetId}`, { key: caller });
            const rotate = await call(s.url, 'POST', `/sender/v2/api-keys/${targetId}/rotate`, { key: caller, body: { grace_seconds: 0 } });
            const within = callerPlane === targetPlane && targetScopes.every((x) => held.includes(x));
            if (rotate.status === 200) {
              const mine = await call(s.url, 'GET', '/sender/v2/me', { key: rotate.body.secret });
              expect(mine.body.plane).toBe(callerPlane);
              expect(mine.body.scopes.every((x: Scope) => held.includes(x))).toBe(true);
            } else {
              expect([403, 404]).toContain(rotate.status);
              expect(rotate.body).not.toHaveProperty('secret');
              expect((await call(s.url, 'GET', '/sender/v2/me', { key: target })).status).toBe(200);
            }
            if (read.status === 200) expect(within).toBe(true);
            expect(rotate.status === 200).toBe(within && held.includes('apikeys.write'));
          } finally {
            await s.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});
