import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/signature/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { isPublicAddress, type LookupAll } from '../../src/sandbox/url-policy.js';
import { call, captureServer, letter, NIN, sandbox, type CaptureServer } from './helpers.js';

const KEY = 'svc_sandbox_endpoints_test';

const DNS: Record<string, string[]> = {
  'public.example': ['93.184.216.34'],
  'public6.example': ['2606:2800:220:1:248:1893:25c8:1946'],
  'private.example': ['10.0.0.5'],
  'mixed.example': ['93.184.216.34', '192.168.1.10'],
  'linklocal6.example': ['fe80::1'],
  localhost: ['127.0.0.1', '::1'],
};
const lookup: LookupAll = async (host) => {
  const list = DNS[host];
  if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

function verifies(c: { headers: Record<string, unknown>; raw: Buffer }, secret: string): boolean {
  return verifySignature({
    header: c.headers['x-service-signature'] as string,
    body: c.raw,
    secrets: [secret],
    now: Math.floor(Date.now() / 1000),
    toleranceSeconds: 300,
  }).ok;
}

describe('webhook URL rules', () => {
  let strict: Sandbox;
  let lax: Sandbox;
  beforeAll(async () => {
    strict = await sandbox({ keys: [KEY], allowPrivateTargets: false, lookup });
    lax = await sandbox({ keys: [KEY], allowPrivateTargets: true, lookup });
  });
  afterAll(async () => {
    await strict.close();
    await lax.close();
  });

  const create = (s: Sandbox, url: string) =>
    call(s.url, 'POST', '/sender/v2/webhook-endpoints', { key: KEY, body: { url, events: ['participant.acted'] } });

  it('accepts https to a name that resolves only to public addresses (IPv4 and IPv6)', async () => {
    expect((await create(strict, 'https://public.example/hooks/postroom')).status).toBe(201);
    expect((await create(strict, 'https://public6.example/hooks')).status).toBe(201);
    expect((await create(strict, 'https://93.184.216.34:8443/hooks')).status).toBe(201);
  });

  const refusals: Array<[string, string]> = [
    ['http://public.example/hooks', 'scheme_not_allowed'],
    ['ftp://public.example/hooks', 'scheme_not_allowed'],
    ['https://user:secret@public.example/hooks', 'credentials_in_url'],
    ['https://token@public.example/hooks', 'credentials_in_url'],
    ['https://private.example/hooks', 'non_public_address'],
    ['https://mixed.example/hooks', 'non_public_address'],
    ['https://linklocal6.example/hooks', 'non_public_address'],
    ['https://localhost/hooks', 'non_public_address'],
    ['https://127.0.0.1/hooks', 'non_public_address'],
    ['https://169.254.169.254/latest/meta-data', 'non_public_address'],
    ['https://[::1]/hooks', 'non_public_address'],
    ['https://[::ffff:127.0.0.1]/hooks', 'non_public_address'],
    ['https://[fd12:3456::1]/hooks', 'non_public_address'],
    ['https://nowhere.example/hooks', 'unresolvable_host'],
    ['not a url', 'invalid_url'],
  ];
  for (const [url, reason] of refusals) {
    it(`refuses ${url} at create time (${reason})`, async () => {
      const res = await create(strict, url);
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'invalid_webhook_url', reason, field: 'url' });
    });
  }

  it('applies the same rules to PATCH', async () => {
    const ep = await create(strict, 'https://public.example/a');
    const res = await call(strict.url, 'PATCH', `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`, {
      key: KEY,
      body: { url: 'https://private.example/a' },
    });
    expect(res.status).toBe(422);
    expect(res.body.error.reason).toBe('non_public_address');
    const read = await call(strict.url, 'GET', `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`, { key: KEY });
    expect(read.body.url).toBe('https://public.example/a');
  });

  it('with allowPrivateTargets: loopback and private targets pass, and plain http only to them', async () => {
    expect((await create(lax, 'http://127.0.0.1:8080/webhooks')).status).toBe(201);
    expect((await create(lax, 'https://private.example/hooks')).status).toBe(201);
    expect((await create(lax, 'http://localhost:8080/webhooks')).status).toBe(201);
    const httpPublic = await create(lax, 'http://public.example/hooks');
    expect(httpPublic.status).toBe(422);
    expect(httpPublic.body.error.reason).toBe('scheme_not_allowed');
    expect((await create(lax, 'https://user:pw@127.0.0.1/x')).body.error.reason).toBe('credentials_in_url');
  });

  it('refuses, at delivery, a name that re-resolves to a private address after passing the check', async () => {
    // The create-time lookup says public; the real resolver says loopback (a DNS rebinding).
    const rebinding = await sandbox({
      keys: [KEY],
      allowPrivateTargets: false,
      lookup: async () => [{ address: '93.184.216.34', family: 4 }],
      retrySchedule: [],
    });
    try {
      const ep = await call(rebinding.url, 'POST', '/sender/v2/webhook-endpoints', { key: KEY, body: { url: 'https://localhost:1/hook' } });
      expect(ep.status).toBe(201);
      await call(rebinding.url, 'POST', `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}/test`, { key: KEY });
      await rebinding.control.waitForIdle(5_000);
      const [d] = rebinding.control.deliveries().deliveries;
      expect(d).toMatchObject({ status: 'dead', attempts: 1 });
      expect(d!.last_error).toMatch(/non-public/);
    } finally {
      await rebinding.close();
    }
  });

  it('classifies addresses', () => {
    for (const a of ['8.8.8.8', '93.184.216.34', '2606:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(a), a).toBe(true);
    for (const a of [
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '127.0.0.1',
      '0.0.0.0',
      '169.254.1.1',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      'fe80::abcd',
      'fc00::1',
      'fd00::1',
      'ff02::1',
      '::ffff:10.0.0.1',
      '::ffff:7f00:1',
      '64:ff9b::a00:1',
      '2001:db8::1',
      'not-an-ip',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });
});

describe('secrets', () => {
  let sb: Sandbox;
  let receiver: CaptureServer;
  let failFirst = true;
  beforeAll(async () => {
    receiver = await captureServer(() => {
      if (failFirst) {
        failFirst = false;
        return 500;
      }
      return 200;
    });
    sb = await sandbox({ keys: [KEY], retrySchedule: [1] });
  });
  afterAll(async () => {
    await sb.close();
    await receiver.close();
  });

  it('shows the secret in the create response only', async () => {
    const created = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', {
      key: KEY,
      body: { url: 'http://127.0.0.1:9/x', events: ['participant.acted'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      endpoint_id: expect.stringMatching(/^we_/),
      url: 'http://127.0.0.1:9/x',
      events: ['participant.acted'],
      active: true,
      created_at: expect.any(String),
      secret: expect.stringMatching(/^whsec_[0-9a-f]{48}$/),
    });
    const secret = created.body.secret as string;
    const id = created.body.endpoint_id as string;
    const later = [
      await call(sb.url, 'GET', '/sender/v2/webhook-endpoints', { key: KEY }),
      await call(sb.url, 'GET', `/sender/v2/webhook-endpoints/${id}`, { key: KEY }),
      await call(sb.url, 'PATCH', `/sender/v2/webhook-endpoints/${id}`, {
        key: KEY,
        body: { events: ['participant.acted', 'correspondence.sealed'] },
      }),
      await call(sb.url, 'GET', '/sandbox/correspondence', { key: KEY }),
    ];
    for (const res of later) {
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain(secret);
      expect(JSON.stringify(res.body)).not.toContain('"secret"');
    }
  });

  it('an endpoint created without events subscribes to nothing; webhook.test cannot be subscribed', async () => {
    const none = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', { key: KEY, body: { url: 'http://127.0.0.1:9/x' } });
    expect(none.body.events).toEqual([]);
    const test = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', {
      key: KEY,
      body: { url: 'http://127.0.0.1:9/x', events: ['webhook.test'] },
    });
    expect(test.status).toBe(400);
    expect(test.body.error.field).toBe('events[0]');
    const unknown = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', {
      key: KEY,
      body: { url: 'http://127.0.0.1:9/x', events: ['participant.acted', 'nope'] },
    });
    expect(unknown.body.error.message).toContain('correspondence.created');
  });

  it('rotate-secret returns a new secret once and cuts the old one at once, even for a retry in flight', async () => {
    const created = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', {
      key: KEY,
      body: { url: receiver.url, events: ['correspondence.created'] },
    });
    const oldSecret = created.body.secret as string;
    await call(sb.url, 'POST', '/sender/v2/correspondence', { key: KEY, body: letter([{ nin: NIN.delivered, ref: 'a' }]) });
    await receiver.waitFor(1);
    // The first attempt failed (500); its retry is scheduled. Rotate before it runs.
    const rotated = await call(sb.url, 'POST', `/sender/v2/webhook-endpoints/${created.body.endpoint_id}/rotate-secret`, { key: KEY });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.endpoint_id).toBe(created.body.endpoint_id);

    await receiver.waitFor(2);
    const [first, retry] = receiver.received;
    expect(verifies(first!, oldSecret)).toBe(true);
    expect(retry!.event.event_id).toBe(first!.event.event_id);
    expect(verifies(retry!, newSecret)).toBe(true);
    expect(verifies(retry!, oldSecret)).toBe(false);

    await call(sb.url, 'POST', '/sender/v2/correspondence', { key: KEY, body: letter([{ nin: NIN.delivered, ref: 'b' }]) });
    await receiver.waitFor(3);
    expect(verifies(receiver.received[2]!, newSecret)).toBe(true);
    expect(verifies(receiver.received[2]!, oldSecret)).toBe(false);
    const list = await call(sb.url, 'GET', '/sender/v2/webhook-endpoints', { key: KEY });
    expect(JSON.stringify(list.body)).not.toContain(newSecret);
  });
});

describe('idempotent creates', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await sandbox({ keys: [KEY, 'svc_sandbox_readonly:correspondence.read'] });
  });
  afterAll(() => sb.close());

  it('the same Idempotency-Key returns the same stored response and creates once', async () => {
    const body = letter([{ nin: NIN.delivered, ref: 'a' }]);
    const headers = { 'idempotency-key': '5f0c6f5e-8f6b-4d0e-9a53-1e2b7c0d4a11' };
    const first = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: KEY, body, headers });
    const again = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: KEY, body, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(sb.control.listCorrespondence()).toHaveLength(1);
    expect(sb.control.events({ type: 'correspondence.created' })).toHaveLength(1);

    const other = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: KEY,
      body: letter([{ nin: NIN.delivered, ref: 'CHANGED' }]),
      headers,
    });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
  });

  it('concurrent requests with one key create once', async () => {
    const headers = { 'idempotency-key': 'concurrent-1' };
    const body = { url: 'http://127.0.0.1:9/x', events: ['participant.acted'] };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => call(sb.url, 'POST', '/sender/v2/webhook-endpoints', { key: KEY, body, headers })),
    );
    const ids = new Set(results.map((r) => r.body.endpoint_id));
    expect(ids.size).toBe(1);
    expect(new Set(results.map((r) => r.body.secret)).size).toBe(1);
    expect(results.every((r) => r.status === 201)).toBe(true);
  });

  it('a 202 queued send replays as 202; rotate-secret and test replay without acting twice', async () => {
    const queued = letter([{ nin: NIN.delivered, ref: 'q' }]);
    const h = { 'idempotency-key': 'queued-1', 'x-sandbox-send-mode': 'queued' };
    const a = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: KEY, body: queued, headers: h });
    const b = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: KEY, body: queued, headers: h });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body.correspondence_id).toBe(a.body.correspondence_id);

    const ep = await call(sb.url, 'POST', '/sender/v2/webhook-endpoints', { key: KEY, body: { url: 'http://127.0.0.1:9/x' } });
    const path = `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`;
    const r1 = await call(sb.url, 'POST', `${path}/rotate-secret`, { key: KEY, headers: { 'idempotency-key': 'rot-1' } });
    const r2 = await call(sb.url, 'POST', `${path}/rotate-secret`, { key: KEY, headers: { 'idempotency-key': 'rot-1' } });
    expect(r2.body.secret).toBe(r1.body.secret);
    const r3 = await call(sb.url, 'POST', `${path}/rotate-secret`, { key: KEY, headers: { 'idempotency-key': 'rot-2' } });
    expect(r3.body.secret).not.toBe(r1.body.secret);

    const t1 = await call(sb.url, 'POST', `${path}/test`, { key: KEY, headers: { 'idempotency-key': 'test-1' } });
    const t2 = await call(sb.url, 'POST', `${path}/test`, { key: KEY, headers: { 'idempotency-key': 'test-1' } });
    expect(t1.status).toBe(202);
    expect(t2.body).toEqual(t1.body);
    expect(sb.control.events({ type: 'webhook.test' })).toHaveLength(1);
  });

  it('refusals are not stored: a corrected request may reuse the key; a 403 stores nothing', async () => {
    const headers = { 'idempotency-key': 'fix-me' };
    const bad = await call(sb.url, 'POST', '/sender/v2/documents', {
      key: KEY,
      body: { filename: 'a', media_type: 'text/plain', content_base64: '!!' },
      headers,
    });
    expect(bad.status).toBe(400);
    const good = await call(sb.url, 'POST', '/sender/v2/documents', {
      key: KEY,
      body: { filename: 'a', media_type: 'text/plain', content_base64: 'aGk=' },
      headers,
    });
    expect(good.status).toBe(201);
    const forbidden = await call(sb.url, 'POST', '/sender/v2/documents', {
      key: 'svc_sandbox_readonly',
      body: { filename: 'b', media_type: 'text/plain', content_base64: 'aGk=' },
      headers: { 'idempotency-key': 'scope-1' },
    });
    expect(forbidden.status).toBe(403);
    expect(
      (
        await call(sb.url, 'POST', '/sender/v2/documents', {
          key: KEY,
          body: { filename: 'b', media_type: 'text/plain', content_base64: 'aGk=' },
          headers: { 'idempotency-key': 'scope-1' },
        })
      ).status,
    ).toBe(201);
    const malformed = await call(sb.url, 'POST', '/sender/v2/documents', {
      key: KEY,
      body: { filename: 'c', media_type: 'text/plain', content_base64: 'aGk=' },
      headers: { 'idempotency-key': 'has space' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.field).toBe('Idempotency-Key');
  });
});
