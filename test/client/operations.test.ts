import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/index.js';
import { API_KEY, ORIGIN, caught, mockedClient } from './support.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ENDPOINT = {
  endpoint_id: 'ep_1',
  url: 'https://hooks.example.com/in',
  events: ['participant.acted'],
  active: true,
  created_at: '2026-11-18T10:00:00.000Z',
};

describe('every operation sends what the spec shows and returns what it answers', () => {
  it('me: GET /me with the bearer key', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/me', 200, {
      organization_id: 'org_1',
      organization_name: 'Acme',
      plane: 'sandbox',
      tier: 'standard',
      approved: true,
      scopes: ['webhooks.read'],
    });
    const me = await m.client.me();
    expect(me.organization_id).toBe('org_1');
    expect(m.calls[0]).toMatchObject({ method: 'GET', path: '/sender/v2/me' });
    expect(m.calls[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(m.calls[0]!.headers['idempotency-key']).toBeUndefined();
    expect(m.client.plane).toBe('sandbox');
  });

  it('documents.upload: POST /documents without an Idempotency-Key unless one is passed', async () => {
    const m = mockedClient();
    const input = { filename: 'a.pdf', media_type: 'application/pdf', content_base64: 'JVBERi0=' };
    m.reply('POST', '/sender/v2/documents', 201, { document_id: 'doc_1', filename: 'a.pdf', size_bytes: 5 });
    m.reply('POST', '/sender/v2/documents', 201, { document_id: 'doc_2', filename: 'a.pdf', size_bytes: 5 });
    expect((await m.client.documents.upload(input)).document_id).toBe('doc_1');
    expect(m.calls[0]!.body).toEqual(input);
    expect(m.calls[0]!.headers['content-type']).toBe('application/json');
    expect(m.calls[0]!.headers['idempotency-key']).toBeUndefined();
    await m.client.documents.upload(input, { idempotencyKey: 'upload-42' });
    expect(m.calls[1]!.headers['idempotency-key']).toBe('upload-42');
  });

  it('correspondence.create: POST /correspondence with a generated Idempotency-Key; 202 means queued', async () => {
    const m = mockedClient();
    const input = {
      kind: 'letter',
      subject: 'Payslip',
      content_type: 'payslip',
      document_ids: ['doc_1'],
      recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, display_name: 'Ada', ref: 'emp-42' }],
    };
    m.reply('POST', '/sender/v2/correspondence', 201, {
      correspondence_id: 'cor_1',
      kind: 'letter',
      status: 'live',
      participants: [{ participant_id: 'par_1', ref: 'emp-42', state: 'delivered' }],
    });
    m.reply('POST', '/sender/v2/correspondence', 202, {
      correspondence_id: 'cor_2',
      kind: 'letter',
      status: 'live',
      participants: [{ participant_id: 'par_2', ref: 'emp-42', state: 'pending' }],
    });
    const sent = await m.client.correspondence.create(input);
    expect(sent).toMatchObject({ correspondence_id: 'cor_1', queued: false });
    expect(m.calls[0]!.body).toEqual(input);
    expect(m.calls[0]!.headers['idempotency-key']).toMatch(UUID);
    const queued = await m.client.correspondence.create(input);
    expect(queued).toMatchObject({ correspondence_id: 'cor_2', queued: true, participants: [{ state: 'pending' }] });
    expect(m.calls[1]!.headers['idempotency-key']).toMatch(UUID);
    expect(m.calls[1]!.headers['idempotency-key']).not.toBe(m.calls[0]!.headers['idempotency-key']);
  });

  it('correspondence.get: GET /correspondence/{id} by default, or the configured path', async () => {
    const body = {
      correspondence_id: 'cor/1',
      kind: 'letter',
      status: 'live',
      participants: [{ participant_id: 'par_1', ref: 'r', state: 'delivered', last_act: 'read', last_act_at: '2026-11-18T10:00:00Z' }],
      send_summary: null,
    };
    const m = mockedClient();
    m.reply('GET', '/sender/v2/correspondence/cor%2F1', 200, body);
    const c = await m.client.correspondence.get('cor/1');
    expect(c.participants[0]!.last_act).toBe('read');
    expect(c.send_summary).toBeNull();

    const custom = mockedClient({ correspondencePath: '/files/{id}/detail' });
    custom.reply('GET', '/sender/v2/files/cor_9/detail', 200, { ...body, correspondence_id: 'cor_9' });
    expect((await custom.client.correspondence.get('cor_9')).correspondence_id).toBe('cor_9');
  });

  it('plans.run: POST /plans/{plan_id}/runs passes the body through; 202 is accepted', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/plans/plan_7/runs', 202, { run_id: 'run_1' });
    const r = await m.client.plans.run('plan_7', { audience: 'all' });
    expect(r).toEqual({ accepted: true, body: { run_id: 'run_1' } });
    expect(m.calls[0]!.body).toEqual({ audience: 'all' });
    expect(m.calls[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('apiKeys.rotate: POST /api-keys/{key_id}/rotate with grace_seconds; returns the new key', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/api-keys/key_1/rotate', 200, { key_id: 'key_1', api_key: 'svc_sandbox_newkey' });
    const r = await m.client.apiKeys.rotate('key_1', { grace_seconds: 3600 });
    expect(r.secret).toBe('svc_sandbox_newkey');
    expect(m.calls[0]!.body).toEqual({ grace_seconds: 3600 });
    expect(m.calls[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('webhookEndpoints.create: POST /webhook-endpoints with url, events and an Idempotency-Key; returns the secret', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/webhook-endpoints', 201, { ...ENDPOINT, secret: 'whsec_abc' });
    const e = await m.client.webhookEndpoints.create({ url: ENDPOINT.url, events: ENDPOINT.events });
    expect(e).toMatchObject({ endpoint_id: 'ep_1', secret: 'whsec_abc', active: true });
    expect(m.calls[0]!.body).toEqual({ url: ENDPOINT.url, events: ENDPOINT.events });
    expect(m.calls[0]!.headers['idempotency-key']).toMatch(UUID);
  });

  it('webhookEndpoints.list: GET /webhook-endpoints?limit=…, one page', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/webhook-endpoints?limit=2', 200, {
      endpoints: [ENDPOINT, { ...ENDPOINT, endpoint_id: 'ep_2' }],
      next_cursor: 'c2',
    });
    const page = await m.client.webhookEndpoints.list({ limit: 2 });
    expect(page.items.map((e) => e.endpoint_id)).toEqual(['ep_1', 'ep_2']);
    expect(page.nextCursor).toBe('c2');
  });

  it('webhookEndpoints.update: PATCH with only the fields given', async () => {
    const m = mockedClient();
    m.reply('PATCH', '/sender/v2/webhook-endpoints/ep_1', 200, { ...ENDPOINT, events: ['claim.claimed'] });
    m.reply('PATCH', '/sender/v2/webhook-endpoints/ep_1', 204, '');
    expect((await m.client.webhookEndpoints.update('ep_1', { events: ['claim.claimed'] }))?.events).toEqual(['claim.claimed']);
    expect(m.calls[0]!.body).toEqual({ events: ['claim.claimed'] });
    expect(await m.client.webhookEndpoints.update('ep_1', { url: 'https://b.example/h' })).toBeUndefined();
    expect(m.calls[1]!.body).toEqual({ url: 'https://b.example/h' });
  });

  it('webhookEndpoints.delete: DELETE /webhook-endpoints/{id}', async () => {
    const m = mockedClient();
    m.reply('DELETE', '/sender/v2/webhook-endpoints/ep_1', 204, '');
    await m.client.webhookEndpoints.delete('ep_1');
    expect(m.calls).toHaveLength(1);
  });

  it('webhookEndpoints.rotateSecret: POST …/rotate-secret with an Idempotency-Key; returns the new secret', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/webhook-endpoints/ep_1/rotate-secret', 200, { secret: 'whsec_new' });
    const r = await m.client.webhookEndpoints.rotateSecret('ep_1');
    expect(r).toMatchObject({ endpoint_id: 'ep_1', secret: 'whsec_new' });
    expect(m.calls[0]!.headers['idempotency-key']).toMatch(UUID);
    expect(m.calls[0]!.body).toBeUndefined();
  });

  it('webhookEndpoints.test: POST …/test with an Idempotency-Key', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/webhook-endpoints/ep_1/test', 202, { event_id: 'evt_t1' });
    expect(await m.client.webhookEndpoints.test('ep_1')).toEqual({ event_id: 'evt_t1' });
    expect(m.calls[0]!.headers['idempotency-key']).toMatch(UUID);
  });

  it('webhookDeliveries.list: GET /webhook-deliveries with the filters in the query', async () => {
    const m = mockedClient();
    const d = {
      delivery_id: 'dl_1',
      endpoint_id: 'ep_1',
      event_id: 'evt_1',
      event_type: 'participant.acted',
      status: 'dead',
      attempts: 8,
      last_error: 'timeout',
      created_at: '2026-11-18T10:00:00Z',
    };
    m.reply('GET', '/sender/v2/webhook-deliveries?limit=10&status=dead&endpoint_id=ep_1', 200, { deliveries: [d], next_cursor: null });
    const page = await m.client.webhookDeliveries.list({ limit: 10, status: 'dead', endpoint_id: 'ep_1' });
    expect(page).toEqual({ items: [d], nextCursor: null });
  });

  it('honours a base URL with a path prefix, and one that already ends in /sender/v2', async () => {
    const prefixed = mockedClient({ baseUrl: `${ORIGIN}/gateway/` });
    prefixed.reply('GET', '/gateway/sender/v2/me', 200, { organization_id: 'o' });
    await prefixed.client.me();
    const full = mockedClient({ baseUrl: `${ORIGIN}/sender/v2` });
    full.reply('GET', '/sender/v2/me', 200, { organization_id: 'o' });
    await full.client.me();
    expect(full.client.baseUrl).toBe(`${ORIGIN}/sender/v2`);
  });

  it('refuses an answer that lacks what the contract promises, without quoting it', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/webhook-endpoints', 201, { endpoint_id: 'ep_1', signing_key: 'whsec_leak' });
    const err = await caught(m.client.webhookEndpoints.create({ url: ENDPOINT.url, events: [] }));
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('invalid_response');
    expect((err as ApiError).message).toContain('"secret"');
    expect(JSON.stringify(err) + (err as Error).message).not.toContain('whsec_leak');
  });

  it('a 2xx body that is not JSON is an invalid_response, not retried', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/me', 200, '<html>gateway</html>');
    const err = (await caught(m.client.me())) as ApiError;
    expect(err.code).toBe('invalid_response');
    expect(m.calls).toHaveLength(1);
  });
});
