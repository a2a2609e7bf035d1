import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient, type ApiError } from '../../src/client/index.js';
import { fixedClock } from '../../src/clock.js';
import { API_KEY, caught, errorWithCode, mockedClient } from './support.js';

const ME = { organization_id: 'org_1' };
const CREATE_INPUT = { kind: 'letter', subject: 's', content_type: 'c', document_ids: [], recipients: [] };
const CREATED = { correspondence_id: 'cor_1', kind: 'letter', status: 'live', participants: [] };

describe('retries', () => {
  it('429 with Retry-After in seconds waits exactly that long, then succeeds', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/me', 429, { error: { message: 'slow down' } }, { 'retry-after': '3' });
    m.reply('GET', '/sender/v2/me', 200, ME);
    expect((await m.client.me()).organization_id).toBe('org_1');
    expect(m.sleeps).toEqual([3000]);
    expect(m.calls).toHaveLength(2);
  });

  it('429 with Retry-After as an HTTP date waits until that date', async () => {
    const clock = fixedClock(Date.parse('2026-11-18T10:00:00Z'));
    const m = mockedClient({ clock });
    m.reply('GET', '/sender/v2/me', 429, '', { 'retry-after': 'Wed, 18 Nov 2026 10:00:07 GMT' });
    m.reply('GET', '/sender/v2/me', 200, ME);
    await m.client.me();
    expect(m.sleeps).toEqual([7000]);
  });

  it('a Retry-After beyond the overall deadline gives up at once with rate_limited', async () => {
    const m = mockedClient({ deadlineMs: 10_000 });
    m.reply('GET', '/sender/v2/me', 429, '', { 'retry-after': '120' });
    const err = (await caught(m.client.me())) as ApiError;
    expect(err.code).toBe('rate_limited');
    expect(err.retryAfterMs).toBe(120_000);
    expect(err.message).toMatch(/deadline/);
    expect(m.sleeps).toEqual([]);
  });

  it('503 twice then 200: three attempts with exponential, jittered waits', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/me', 503, '');
    m.reply('GET', '/sender/v2/me', 503, '');
    m.reply('GET', '/sender/v2/me', 200, ME);
    await m.client.me();
    expect(m.calls).toHaveLength(3);
    // random() is 0.5: half of 250 ms, then half of 500 ms.
    expect(m.sleeps).toEqual([125, 250]);
  });

  it('the same Idempotency-Key on every retry of one create, a new one for the next create', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/correspondence', 503, '');
    m.reply('POST', '/sender/v2/correspondence', 502, '');
    m.reply('POST', '/sender/v2/correspondence', 201, CREATED);
    m.reply('POST', '/sender/v2/correspondence', 201, CREATED);
    await m.client.correspondence.create(CREATE_INPUT);
    const keys = m.calls.map((c) => c.headers['idempotency-key']);
    expect(keys.slice(0, 3).every((k) => k === keys[0])).toBe(true);
    expect(keys[0]).toBeTruthy();
    await m.client.correspondence.create(CREATE_INPUT);
    expect(m.calls[3]!.headers['idempotency-key']).not.toBe(keys[0]);
  });

  it('a caller-supplied Idempotency-Key is sent on every attempt', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/webhook-endpoints/ep_1/test', 500, '');
    m.reply('POST', '/sender/v2/webhook-endpoints/ep_1/test', 200, {});
    await m.client.webhookEndpoints.test('ep_1', { idempotencyKey: 'job-7-test' });
    expect(m.calls.map((c) => c.headers['idempotency-key'])).toEqual(['job-7-test', 'job-7-test']);
  });

  it('never retries a POST without an Idempotency-Key', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/documents', 503, '');
    m.reply('POST', '/sender/v2/documents', 201, { document_id: 'doc_dup' });
    const err = (await caught(m.client.documents.upload({ filename: 'a', media_type: 'text/plain', content_base64: 'YQ==' }))) as ApiError;
    expect(err.code).toBe('server_error');
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/not retried/);
    expect(m.calls).toHaveLength(1);
    expect(m.sleeps).toEqual([]);
  });

  it('does not retry a POST without a key after a reset either: it may have been applied', async () => {
    const m = mockedClient();
    m.fail('POST', '/sender/v2/plans/p1/runs', errorWithCode('read ECONNRESET', 'ECONNRESET'));
    const err = (await caught(m.client.plans.run('p1'))) as ApiError;
    expect(err.code).toBe('network_error');
    expect(m.calls).toHaveLength(1);
  });

  it('a reset connection is retried, with the same Idempotency-Key', async () => {
    const m = mockedClient();
    m.fail('POST', '/sender/v2/webhook-endpoints/ep_1/rotate-secret', errorWithCode('read ECONNRESET', 'ECONNRESET'));
    m.fail('POST', '/sender/v2/webhook-endpoints/ep_1/rotate-secret', errorWithCode('other side closed', 'UND_ERR_SOCKET'));
    m.reply('POST', '/sender/v2/webhook-endpoints/ep_1/rotate-secret', 200, { secret: 'whsec_n' });
    expect((await m.client.webhookEndpoints.rotateSecret('ep_1')).secret).toBe('whsec_n');
    expect(new Set(m.calls.map((c) => c.headers['idempotency-key'])).size).toBe(1);
    expect(m.calls).toHaveLength(3);
  });

  it('gives up after maxAttempts and says so', async () => {
    const m = mockedClient({ maxAttempts: 3 });
    for (let i = 0; i < 3; i++) m.reply('GET', '/sender/v2/webhook-endpoints', 504, { error: { message: 'upstream' } });
    const err = (await caught(m.client.webhookEndpoints.list())) as ApiError;
    expect(err).toMatchObject({ code: 'server_error', status: 504, attempts: 3, operation: 'webhookEndpoints.list' });
    expect(err.message).toMatch(/after 3 attempts/);
    expect(err.body).toEqual({ error: { message: 'upstream' } });
  });

  it('does not retry a 4xx other than 429', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/correspondence/nope', 404, { error: { code: 'not_found', message: 'no such file' } });
    const err = (await caught(m.client.correspondence.get('nope'))) as ApiError;
    expect(err).toMatchObject({ code: 'not_found', status: 404, attempts: 1 });
    expect(err.message).toContain('no such file');
  });

  it('retries PATCH and DELETE (idempotent by nature)', async () => {
    const m = mockedClient();
    m.reply('PATCH', '/sender/v2/webhook-endpoints/ep_1', 502, '');
    m.reply('PATCH', '/sender/v2/webhook-endpoints/ep_1', 200, { endpoint_id: 'ep_1' });
    await m.client.webhookEndpoints.update('ep_1', { url: 'https://x.example/h' });
    m.reply('DELETE', '/sender/v2/webhook-endpoints/ep_1', 503, '');
    m.reply('DELETE', '/sender/v2/webhook-endpoints/ep_1', 204, '');
    await m.client.webhookEndpoints.delete('ep_1');
    expect(m.calls.map((c) => c.method)).toEqual(['PATCH', 'PATCH', 'DELETE', 'DELETE']);
  });

  it('a DELETE whose first answer was lost and then finds the endpoint gone has succeeded', async () => {
    const m = mockedClient();
    m.fail('DELETE', '/sender/v2/webhook-endpoints/ep_1', errorWithCode('read ECONNRESET', 'ECONNRESET'));
    m.reply('DELETE', '/sender/v2/webhook-endpoints/ep_1', 404, '');
    await expect(m.client.webhookEndpoints.delete('ep_1')).resolves.toBeUndefined();
    m.reply('DELETE', '/sender/v2/webhook-endpoints/ep_2', 404, '');
    expect(((await caught(m.client.webhookEndpoints.delete('ep_2'))) as ApiError).code).toBe('not_found');
  });

  it('a time-out (from the dispatcher) is retried and reported as timeout', async () => {
    const m = mockedClient({ maxAttempts: 2 });
    m.fail('GET', '/sender/v2/me', errorWithCode('Headers Timeout Error', 'UND_ERR_HEADERS_TIMEOUT'));
    m.fail('GET', '/sender/v2/me', errorWithCode('Body Timeout Error', 'UND_ERR_BODY_TIMEOUT'));
    const err = (await caught(m.client.me())) as ApiError;
    expect(err).toMatchObject({ code: 'timeout', attempts: 2 });
    expect(err.status).toBeUndefined();
  });

  it('stops waiting when the caller aborts', async () => {
    const ctl = new AbortController();
    const m = mockedClient({
      sleep: async () => {
        ctl.abort();
        throw new Error('aborted');
      },
    });
    m.reply('GET', '/sender/v2/me', 503, '');
    const err = (await caught(m.client.me({ signal: ctl.signal }))) as ApiError;
    expect(err.code).toBe('aborted');
  });
});

describe('time-outs and resets on a real socket', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r) ?? r(undefined));
    server = undefined;
  });

  async function listen(handler: http.RequestListener): Promise<string> {
    server = http.createServer(handler);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  }

  it('a server that never answers hits the headers time-out on every attempt', async () => {
    let requests = 0;
    const base = await listen(() => {
      requests++;
    });
    const client = createApiClient({
      baseUrl: base,
      apiKey: API_KEY,
      maxAttempts: 2,
      timeouts: { headersMs: 100 },
      sleep: async () => undefined,
    });
    try {
      const err = (await caught(client.me())) as ApiError;
      expect(err).toMatchObject({ code: 'timeout', attempts: 2 });
      expect(requests).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('the overall deadline cuts a hanging attempt short and is not retried past', async () => {
    const base = await listen(() => undefined);
    const client = createApiClient({
      baseUrl: base,
      apiKey: API_KEY,
      maxAttempts: 5,
      deadlineMs: 150,
      timeouts: { headersMs: 60_000 },
      sleep: async () => undefined,
    });
    try {
      const err = (await caught(client.me())) as ApiError;
      expect(err.code).toBe('timeout');
      expect(err.attempts).toBe(1);
      expect(err.message).toMatch(/deadline/);
    } finally {
      await client.close();
    }
  });

  it('a connection reset by the server is retried, then succeeds', async () => {
    let requests = 0;
    const base = await listen((req, res) => {
      requests++;
      if (requests === 1) {
        req.socket.destroy();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(ME));
    });
    const client = createApiClient({ baseUrl: base, apiKey: API_KEY, sleep: async () => undefined });
    try {
      expect((await client.me()).organization_id).toBe('org_1');
      expect(requests).toBe(2);
    } finally {
      await client.close();
    }
  });
});
