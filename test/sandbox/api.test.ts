import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, type Sandbox, type Scope } from '../../src/sandbox/index.js';
import { call, letter, NIN, sandbox } from './helpers.js';

const FULL = 'svc_sandbox_full0000000000000000';
const LIVE = 'svc_live_full00000000000000000000';
/** One key per scope that lacks exactly that scope, and one that has only it. */
const without = (s: Scope): string => `svc_sandbox_without_${s.replace('.', '_')}`;
const only = (s: Scope): string => `svc_sandbox_only_${s.replace('.', '_')}`;

let sb: Sandbox;
let endpointId: string;
let correspondenceId: string;
let documentId: string;
let keyId: string;
let rotateKeyId: string;

beforeAll(async () => {
  sb = await sandbox({
    keys: [
      FULL,
      LIVE,
      ...SCOPES.flatMap((s) => [
        { key: without(s), scopes: SCOPES.filter((x) => x !== s) },
        { key: only(s), scopes: [s] },
      ]),
      // A key reaches only keys within its own scopes, so each key operation gets a target its one-scope key holds.
      { key: 'svc_sandbox_readme', scopes: ['apikeys.read'] },
      { key: 'svc_sandbox_rotateme', scopes: ['apikeys.write'] },
      { key: 'svc_sandbox_revokeme', scopes: ['apikeys.write'] },
    ],
  });
  const ep = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', {
    key: FULL,
    body: { url: 'http://127.0.0.1:9/none', events: [] },
  });
  endpointId = ep.body.endpoint_id;
  const c = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: FULL, body: letter([{ nin: NIN.delivered, ref: 'r1' }]) });
  correspondenceId = c.body.correspondence_id;
  const d = await call(sb.url, 'POST', '/sender/v2/documents', {
    key: FULL,
    body: { filename: 'a.txt', media_type: 'text/plain', content_base64: Buffer.from('hello').toString('base64') },
  });
  documentId = d.body.document_id;
  const keys = await call(sb.url, 'GET', '/sender/v2/api-keys', { key: FULL });
  keyId = keys.body.api_keys.find((k: { prefix: string }) => k.prefix === 'svc_sandbox_read').key_id;
  rotateKeyId = keys.body.api_keys.find((k: { prefix: string }) => k.prefix === 'svc_sandbox_rota').key_id;
});
afterAll(() => sb.close());

describe('authentication', () => {
  it('answers 401 missing_api_key without a key and 401 invalid_api_key for an unknown one', async () => {
    const none = await call(sb.url, 'GET', '/sender/v2/me', { key: null });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('missing_api_key');
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    const unknown = await call(sb.url, 'GET', '/sender/v2/me', { key: 'svc_sandbox_nobody' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('invalid_api_key');
    const basic = await call(sb.url, 'GET', '/sender/v2/me', { key: null, headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expect(basic.status).toBe(401);
  });

  it('guards the control routes with a key too', async () => {
    expect((await call(sb.url, 'GET', '/sandbox/stats', { key: null })).status).toBe(401);
    expect((await call(sb.url, 'GET', '/sandbox/stats', { key: FULL })).status).toBe(200);
  });

  it('GET /me needs no scope and reports the plane the key selects', async () => {
    const me = await call(sb.url, 'GET', '/sender/v2/me', { key: only('audit.read') });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      organization_id: 'org_sandbox',
      organization_name: 'Sandbox Organisation',
      plane: 'sandbox',
      tier: 'standard',
      approved: true,
      scopes: ['audit.read'],
    });
    expect((await call(sb.url, 'GET', '/sender/v2/me', { key: LIVE })).body.plane).toBe('live');
  });
});

describe('every operation and its scope', () => {
  type Op = { name: string; scope: Scope; method: string; path: () => string; body?: () => unknown; ok: number };
  const ops: Op[] = [
    {
      name: 'upload a document',
      scope: 'documents.write',
      method: 'POST',
      path: () => '/sender/v2/documents',
      body: () => ({ filename: 'x.pdf', media_type: 'application/pdf', content_base64: 'JVBERi0=' }),
      ok: 201,
    },
    { name: 'read a document', scope: 'documents.read', method: 'GET', path: () => `/sender/v2/documents/${documentId}`, ok: 200 },
    {
      name: 'create a correspondence',
      scope: 'correspondence.write',
      method: 'POST',
      path: () => '/sender/v2/correspondence',
      body: () => letter([{ nin: NIN.delivered, ref: 'x' }]),
      ok: 201,
    },
    {
      name: 'read a correspondence',
      scope: 'correspondence.read',
      method: 'GET',
      path: () => `/sender/v2/correspondence/${correspondenceId}`,
      ok: 200,
    },
    {
      name: 'run a plan',
      scope: 'correspondence.write',
      method: 'POST',
      path: () => '/sender/v2/plans/plan_monthly/runs',
      body: () => ({}),
      ok: 202,
    },
    { name: 'list API keys', scope: 'apikeys.read', method: 'GET', path: () => '/sender/v2/api-keys', ok: 200 },
    { name: 'read an API key', scope: 'apikeys.read', method: 'GET', path: () => `/sender/v2/api-keys/${keyId}`, ok: 200 },
    {
      name: 'rotate an API key',
      scope: 'apikeys.write',
      method: 'POST',
      path: () => `/sender/v2/api-keys/${rotateKeyId}/rotate`,
      body: () => ({ grace_seconds: 3600 }),
      ok: 200,
    },
    {
      name: 'create an endpoint',
      scope: 'webhooks.write',
      method: 'POST',
      path: () => '/sender/v2/webhook-endpoints',
      body: () => ({ url: 'http://127.0.0.1:9/x', events: ['participant.acted'] }),
      ok: 201,
    },
    { name: 'list endpoints', scope: 'webhooks.read', method: 'GET', path: () => '/sender/v2/webhook-endpoints?limit=5', ok: 200 },
    { name: 'read an endpoint', scope: 'webhooks.read', method: 'GET', path: () => `/sender/v2/webhook-endpoints/${endpointId}`, ok: 200 },
    {
      name: 'update an endpoint',
      scope: 'webhooks.write',
      method: 'PATCH',
      path: () => `/sender/v2/webhook-endpoints/${endpointId}`,
      body: () => ({ events: ['participant.acted'] }),
      ok: 200,
    },
    {
      name: 'rotate an endpoint secret',
      scope: 'webhooks.write',
      method: 'POST',
      path: () => `/sender/v2/webhook-endpoints/${endpointId}/rotate-secret`,
      ok: 200,
    },
    {
      name: 'send a test event',
      scope: 'webhooks.write',
      method: 'POST',
      path: () => `/sender/v2/webhook-endpoints/${endpointId}/test`,
      ok: 202,
    },
    { name: 'list deliveries', scope: 'webhooks.read', method: 'GET', path: () => '/sender/v2/webhook-deliveries?status=dead', ok: 200 },
  ];

  for (const op of ops) {
    it(`${op.name}: 403 naming ${op.scope} without it, ${op.ok} with only it`, async () => {
      const refused = await call(sb.url, op.method, op.path(), { key: without(op.scope), ...(op.body ? { body: op.body() } : {}) });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: op.scope });
      expect(refused.body.error.message).toContain(op.scope);
      const allowed = await call(sb.url, op.method, op.path(), { key: only(op.scope), ...(op.body ? { body: op.body() } : {}) });
      expect(allowed.status).toBe(op.ok);
    });
  }

  it('delete an endpoint and revoke a key: 403 without the write scope, then 204 / revoked', async () => {
    const ep = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', { key: FULL, body: { url: 'http://127.0.0.1:9/y' } });
    const path = `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`;
    expect((await call(sb.url, 'DELETE', path, { key: without('webhooks.write') })).body.error.required_scope).toBe('webhooks.write');
    expect((await call(sb.url, 'DELETE', path, { key: only('webhooks.write') })).status).toBe(204);
    expect((await call(sb.url, 'GET', path, { key: FULL })).status).toBe(404);

    const target = (await call(sb.url, 'GET', '/sender/v2/api-keys', { key: FULL })).body.api_keys.find(
      (k: { prefix: string }) => k.prefix === 'svc_sandbox_revo',
    )!;
    expect((await call(sb.url, 'DELETE', `/sender/v2/api-keys/${target.key_id}`, { key: without('apikeys.write') })).status).toBe(403);
    const revoked = await call(sb.url, 'DELETE', `/sender/v2/api-keys/${target.key_id}`, { key: only('apikeys.write') });
    expect(revoked.body.revoked).toBe(true);
  });
});

describe('operations', () => {
  it('POST /documents decodes base64 and returns size_bytes; refuses bad base64 with 400', async () => {
    const bytes = Buffer.from('%PDF-1.4 sample document body');
    const ok = await call(sb.url, 'POST', '/sender/v2/documents', {
      key: FULL,
      body: { filename: 'statement.pdf', media_type: 'application/pdf', content_base64: bytes.toString('base64') },
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toEqual({ document_id: expect.stringMatching(/^doc_/), filename: 'statement.pdf', size_bytes: bytes.length });
    const bad = await call(sb.url, 'POST', '/sender/v2/documents', {
      key: FULL,
      body: { filename: 'x', media_type: 'application/pdf', content_base64: 'not base64!' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'content_base64' });
  });

  it('POST /correspondence: 201 with participants whose states follow the addressing', async () => {
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: FULL,
      body: {
        kind: 'statement',
        subject: 'November',
        content_type: 'application/pdf',
        document_ids: [documentId],
        recipients: [
          { addressing: { type: 'nin', nin: NIN.delivered }, display_name: 'A', ref: 'a' },
          { addressing: { type: 'nin', nin: NIN.held }, display_name: 'B', ref: 'b' },
          { addressing: { type: 'nin', nin: NIN.undeliverable }, display_name: 'C', ref: 'c' },
          { addressing: { type: 'email', email: 'd@example.com' }, ref: 'd' },
          { addressing: { type: 'cac', cac: 'RC123456' }, ref: 'e' },
          { addressing: { type: 'claim_code', name: 'Frank Name' }, ref: 'f' },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ kind: 'statement', status: 'live', document_ids: [documentId] });
    expect(res.body.participants.map((p: { ref: string; state: string }) => [p.ref, p.state])).toEqual([
      ['a', 'delivered'],
      ['b', 'held'],
      ['c', 'undeliverable'],
      ['d', 'delivered'],
      ['e', 'delivered'],
      ['f', 'held'],
    ]);
    const read = await call(sb.url, 'GET', `/sender/v2/correspondence/${res.body.correspondence_id}`, { key: FULL });
    // A direct send has no summary: counts come only with a queued send's correspondence.send_completed.
    expect(read.body.send_summary).toBeNull();
  });

  it('refuses a NIN that is not eleven digits with 400 naming the field', async () => {
    for (const nin of ['1234567890', '123456789012', '1234567890a', '']) {
      const res = await call(sb.url, 'POST', '/sender/v2/correspondence', {
        key: FULL,
        body: letter([
          { nin: NIN.delivered, ref: 'ok' },
          { nin, ref: 'bad' },
        ]),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'recipients[1].addressing.nin' });
      expect(res.body.error.message).toMatch(/eleven digits/);
    }
    const unknownType = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: FULL,
      body: { ...letter([]), recipients: [{ addressing: { type: 'fax', fax: '1' }, ref: 'x' }] },
    });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error.message).toMatch(/nin, email, cac, claim_code/);
  });

  it('validates the rest of the body: unknown document 422, malformed JSON 400, wrong content type 415', async () => {
    const unknownDoc = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: FULL,
      body: letter([{ nin: NIN.delivered, ref: 'a' }], { document_ids: ['doc_nope'] }),
    });
    expect(unknownDoc.status).toBe(422);
    expect(unknownDoc.body.error.code).toBe('unknown_document');
    const noRecipients = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: FULL, body: letter([]) });
    expect(noRecipients.status).toBe(400);
    expect(noRecipients.body.error.field).toBe('recipients');
    const badJson = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: FULL,
      rawBody: '{"kind":',
      headers: { 'content-type': 'application/json' },
    });
    expect(badJson.status).toBe(400);
    expect(badJson.body.error.code).toBe('invalid_json');
    const text = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: FULL,
      rawBody: 'kind=letter',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
  });

  it('a queued send answers 202 with every participant pending, then completes with send_completed counts', async () => {
    // A queue that does not drain by itself: under load a short delay could elapse before the first read.
    const slow = await sandbox({ keys: [FULL], queueDelayMs: 600_000 });
    try {
      const res = await call(slow.url, 'POST', '/sender/v2/correspondence', {
        key: FULL,
        body: letter(
          Array.from({ length: 12 }, (_, i) => ({ nin: i < 2 ? NIN.held : i < 3 ? NIN.undeliverable : NIN.delivered, ref: `r${i}` })),
        ),
      });
      expect(res.status).toBe(202);
      expect(res.body.participants.every((p: { state: string }) => p.state === 'pending')).toBe(true);
      expect(
        (await call(slow.url, 'GET', `/sender/v2/correspondence/${res.body.correspondence_id}`, { key: FULL })).body.send_summary,
      ).toBeNull();
      slow.control.completeSend(res.body.correspondence_id);
      const after = await call(slow.url, 'GET', `/sender/v2/correspondence/${res.body.correspondence_id}`, { key: FULL });
      expect(after.body.send_summary).toEqual({ delivered: 9, held: 2, undeliverable: 1, total: 12 });
      const completed = slow.control.events({ type: 'correspondence.send_completed', correspondenceId: res.body.correspondence_id });
      expect(completed).toHaveLength(1);
      expect(slow.control.event(completed[0]!.event_id).data).toEqual({
        correspondence_id: res.body.correspondence_id,
        delivered: 9,
        held: 2,
        undeliverable: 1,
        total: 12,
      });
    } finally {
      await slow.close();
    }
  });

  it('POST /plans/{plan_id}/runs answers 202 and the run completes like a queued send', async () => {
    const res = await call(sb.url, 'POST', '/sender/v2/plans/payroll-2026-11/runs', {
      key: FULL,
      body: { recipients: [{ addressing: { type: 'nin', nin: NIN.delivered }, ref: 'emp-1' }] },
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ plan_id: 'payroll-2026-11', status: 'queued', correspondence_id: expect.stringMatching(/^cor_/) });
    await sb.control.waitForIdle();
    expect(sb.control.correspondence(res.body.correspondence_id).send_summary).toEqual({
      delivered: 1,
      held: 0,
      undeliverable: 0,
      total: 1,
    });
  });

  it('unknown ids are 404 not_found; unknown routes 404 route_not_found', async () => {
    const res = await call(sb.url, 'GET', '/sender/v2/correspondence/cor_missing', { key: FULL });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'not_found', resource: 'correspondence' });
    expect((await call(sb.url, 'PATCH', '/sender/v2/webhook-endpoints/we_missing', { key: FULL, body: { events: [] } })).status).toBe(404);
    expect((await call(sb.url, 'GET', '/sender/v2/nothing', { key: FULL })).body.error.code).toBe('route_not_found');
  });

  it('sends on the live plane debit the wallet and fire wallet.debited; an empty wallet refuses with 402', async () => {
    const before = sb.control.wallet();
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: LIVE,
      body: letter([
        { nin: NIN.delivered, ref: 'a' },
        { nin: NIN.delivered, ref: 'b' },
      ]),
    });
    expect(res.status).toBe(201);
    const after = sb.control.wallet();
    expect(after.balance).toBe(before.balance - 2 * before.price_per_recipient);
    const debit = sb.control.events({ type: 'wallet.debited', correspondenceId: res.body.correspondence_id });
    expect(sb.control.event(debit[0]!.event_id).data).toEqual({
      amount: 2 * before.price_per_recipient,
      currency: 'NGN',
      correspondence_id: res.body.correspondence_id,
      balance: after.balance,
    });
    // A sandbox-plane send costs nothing.
    await call(sb.url, 'POST', '/sender/v2/correspondence', { key: FULL, body: letter([{ nin: NIN.delivered, ref: 'a' }]) });
    expect(sb.control.wallet().balance).toBe(after.balance);

    const poor = await sandbox({ keys: [LIVE], wallet: { balance: 10, pricePerRecipient: 50 } });
    try {
      const refused = await call(poor.url, 'POST', '/sender/v2/correspondence', {
        key: LIVE,
        body: letter([{ nin: NIN.delivered, ref: 'a' }]),
      });
      expect(refused.status).toBe(402);
      expect(refused.body.error.code).toBe('insufficient_funds');
      expect(poor.control.listCorrespondence()).toHaveLength(0);
    } finally {
      await poor.close();
    }
  });

  it('rotating an API key returns the new key once; the old one works for grace_seconds only', async () => {
    const s = await sandbox({ keys: ['svc_sandbox_admin', 'svc_sandbox_victim:webhooks.read'] });
    try {
      const keys = await call(s.url, 'GET', '/sender/v2/api-keys', { key: 'svc_sandbox_admin' });
      // Lists redact the secret to its prefix.
      expect(JSON.stringify(keys.body)).not.toContain('svc_sandbox_victim');
      const victim = keys.body.api_keys.find((k: { prefix: string }) => k.prefix === 'svc_sandbox_vict');
      const rotated = await call(s.url, 'POST', `/sender/v2/api-keys/${victim.key_id}/rotate`, {
        key: 'svc_sandbox_admin',
        body: { grace_seconds: 0 },
      });
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^svc_sandbox_[0-9a-f]{32}$/);
      expect((await call(s.url, 'GET', '/sender/v2/webhook-endpoints', { key: 'svc_sandbox_victim' })).status).toBe(401);
      expect((await call(s.url, 'GET', '/sender/v2/webhook-endpoints', { key: rotated.body.secret })).status).toBe(200);
      expect((await call(s.url, 'GET', `/sender/v2/api-keys/${victim.key_id}`, { key: 'svc_sandbox_admin' })).body).not.toHaveProperty(
        'secret',
      );

      const graced = await call(s.url, 'POST', `/sender/v2/api-keys/${victim.key_id}/rotate`, {
        key: 'svc_sandbox_admin',
        body: { grace_seconds: 600 },
      });
      expect((await call(s.url, 'GET', '/sender/v2/webhook-endpoints', { key: rotated.body.secret })).status).toBe(200);
      expect((await call(s.url, 'GET', '/sender/v2/webhook-endpoints', { key: graced.body.secret })).status).toBe(200);
      const bad = await call(s.url, 'POST', `/sender/v2/api-keys/${victim.key_id}/rotate`, {
        key: 'svc_sandbox_admin',
        body: { grace_seconds: -1 },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.field).toBe('grace_seconds');
    } finally {
      await s.close();
    }
  });
});
