import { describe, expect, it } from 'vitest';
import { ApiError, OPERATION_SCOPES, createApiClient, createApiClientFromConfig } from '../../src/client/index.js';
import { loadConfig } from '../../src/config/config.js';
import { ConfigError, PostroomError } from '../../src/errors.js';
import { API_KEY, ORIGIN, caught, errorWithCode, mockedClient } from './support.js';

describe('ApiError', () => {
  it('a 403 names the scope the operation needs', async () => {
    const m = mockedClient();
    m.reply('POST', '/sender/v2/webhook-endpoints', 403, { error: { code: 'forbidden', message: 'missing scope' } });
    const err = (await caught(m.client.webhookEndpoints.create({ url: 'https://h.example/x', events: [] }))) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toBeInstanceOf(PostroomError);
    expect(err).toMatchObject({
      code: 'insufficient_scope',
      status: 403,
      operation: 'webhookEndpoints.create',
      requiredScope: 'webhooks.write',
    });
    expect(err.message).toContain('webhooks.write');
    expect(err.body).toEqual({ error: { code: 'forbidden', message: 'missing scope' } });
    expect(err.toJSON()).toMatchObject({ code: 'insufficient_scope', details: { required_scope: 'webhooks.write', status: 403 } });
  });

  it.each([
    ['webhookDeliveries.list', 'webhooks.read'],
    ['correspondence.get', 'correspondence.read'],
    ['apiKeys.rotate', 'apikeys.write'],
  ] as const)('%s needs %s', (op, scope) => {
    expect(OPERATION_SCOPES[op]).toBe(scope);
  });

  it('a 401 says the key was refused and where it comes from', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/me', 401, 'unauthorized');
    const err = (await caught(m.client.me())) as ApiError;
    expect(err.code).toBe('unauthorized');
    expect(err.message).toMatch(/POSTROOM_API_KEY/);
  });

  it.each([
    [400, 'bad_request'],
    [404, 'not_found'],
    [409, 'conflict'],
    [422, 'validation_failed'],
    [418, 'client_error'],
    [500, 'server_error'],
  ])('status %i → %s', async (status, code) => {
    const m = mockedClient({ maxAttempts: 1 });
    m.reply('GET', '/sender/v2/me', status, '');
    expect(((await caught(m.client.me())) as ApiError).code).toBe(code);
  });
});

describe('the API key never leaks', () => {
  it('is absent from every error, its JSON, its cause chain and every log line', async () => {
    const m = mockedClient({ maxAttempts: 2 });
    // A misbehaving gateway that echoes the Authorization header back.
    m.reply('GET', '/sender/v2/me', 401, { error: { message: `bad token Bearer ${API_KEY}` } });
    m.reply('GET', '/sender/v2/webhook-endpoints', 403, `forbidden for ${API_KEY}`);
    m.reply('POST', '/sender/v2/correspondence', 503, '');
    m.fail('POST', '/sender/v2/correspondence', errorWithCode(`socket hang up ${API_KEY}`, 'ECONNRESET'));
    m.reply('GET', '/sender/v2/webhook-deliveries', 200, 'not json');
    m.fail('DELETE', '/sender/v2/webhook-endpoints/ep_1', errorWithCode('getaddrinfo ENOTFOUND', 'ENOTFOUND'));
    m.reply('GET', '/sender/v2/me', 200, { organization_id: 'o' });

    const errors: unknown[] = [];
    errors.push(await caught(m.client.me()));
    errors.push(await caught(m.client.webhookEndpoints.list()));
    errors.push(
      await caught(m.client.correspondence.create({ kind: 'k', subject: 's', content_type: 'c', document_ids: [], recipients: [] })),
    );
    errors.push(await caught(m.client.webhookDeliveries.list()));
    errors.push(await caught(m.client.webhookEndpoints.delete('ep_1')));
    await m.client.me();

    expect(errors).toHaveLength(5);
    for (const err of errors) {
      expect(err).toBeInstanceOf(ApiError);
      const e = err as ApiError;
      const text = [
        e.message,
        e.stack,
        JSON.stringify(e),
        JSON.stringify(e.body),
        String(e.cause),
        (e.cause as Error | undefined)?.stack,
      ].join('\n');
      expect(text).not.toContain(API_KEY);
    }
    expect((errors[0] as ApiError).message).toContain('[redacted]');
    // Callers log what the client throws (the reconciler does): that must be clean as well.
    for (const err of errors) m.logger.error({ err }, 'service call failed');
    expect(m.logLines.filter((l) => l.includes('service API call failed; retrying')).length).toBe(1);
    expect(m.logLines.filter((l) => l.includes('service call failed')).length).toBe(5);
    expect(m.logLines.join('')).not.toContain(API_KEY);
    expect(JSON.stringify(m.client)).not.toContain(API_KEY);
  });

  it('a key with an unknown prefix is a configuration error that does not echo the key', () => {
    const key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
    const err = (() => {
      try {
        createApiClient({ baseUrl: ORIGIN, apiKey: key });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/svc_sandbox_.*svc_live_/);
    expect(`${(err as Error).message}${JSON.stringify(err)}`).not.toContain(key);
    expect(`${(err as Error).message}`).not.toContain('4eC39');
  });

  it('the plane comes from the key prefix', () => {
    expect(createApiClient({ baseUrl: ORIGIN, apiKey: 'svc_live_abc' }).plane).toBe('live');
    expect(createApiClient({ baseUrl: ORIGIN, apiKey: 'svc_sandbox_abc' }).plane).toBe('sandbox');
    expect(() => createApiClient({ baseUrl: ORIGIN, apiKey: 'svc_live_' })).toThrow(ConfigError);
    expect(() => createApiClient({ baseUrl: ORIGIN, apiKey: 'svc_live_a b' })).toThrow(/whitespace/);
  });

  it('from config: base URL, key and correspondence path are checked at creation', () => {
    expect(() => createApiClientFromConfig(loadConfig({ POSTROOM_API_KEY: API_KEY }))).toThrow(/POSTROOM_API_BASE_URL/);
    expect(() => createApiClientFromConfig(loadConfig({ POSTROOM_API_BASE_URL: ORIGIN }))).toThrow(/POSTROOM_API_KEY/);
    expect(() =>
      createApiClientFromConfig(
        loadConfig({ POSTROOM_API_BASE_URL: ORIGIN, POSTROOM_API_KEY: API_KEY, POSTROOM_CORRESPONDENCE_PATH: '/correspondence' }),
      ),
    ).toThrow(/POSTROOM_CORRESPONDENCE_PATH/);
    const c = createApiClientFromConfig(loadConfig({ POSTROOM_API_BASE_URL: ORIGIN, POSTROOM_API_KEY: 'svc_live_x1' }));
    expect(c.plane).toBe('live');
  });
});

describe('metrics', () => {
  it('counts every attempt by operation and status class, and times them', async () => {
    const m = mockedClient();
    m.reply('GET', '/sender/v2/me', 503, '');
    m.fail('GET', '/sender/v2/me', errorWithCode('reset', 'ECONNRESET'));
    m.reply('GET', '/sender/v2/me', 200, { organization_id: 'o' });
    m.reply('GET', '/sender/v2/webhook-endpoints', 404, '');
    await m.client.me();
    await caught(m.client.webhookEndpoints.list());
    const counts = Object.fromEntries(
      (await m.metrics.apiRequests.get()).values.map((v) => [`${v.labels.operation} ${v.labels.status_class}`, v.value]),
    );
    expect(counts).toEqual({ 'me 5xx': 1, 'me network': 1, 'me 2xx': 1, 'webhookEndpoints.list 4xx': 1 });
    const durations = (await m.metrics.apiDuration.get()).values.filter(
      (v) => v.metricName === 'postroom_api_request_duration_seconds_count',
    );
    expect(Object.fromEntries(durations.map((v) => [v.labels.operation, v.value]))).toEqual({ me: 3, 'webhookEndpoints.list': 1 });
  });
});
