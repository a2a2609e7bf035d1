import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient, type ApiError } from '../../src/client/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { generateKey } from '../../src/sandbox/keys.js';
import { caught } from './support.js';

const recipient = (n: number) => ({ addressing: { type: 'nin', nin: `1000000000${n}` }, display_name: `R${n}`, ref: `emp-${n}` });

/** The client against the sandbox, the local stand-in for the service: every operation, for real over HTTP. */
describe('client against the sandbox', () => {
  let sandbox: Sandbox;
  let client: ApiClient;
  const key = generateKey('sandbox');
  const readOnlyKey = generateKey('sandbox');
  const logLines: string[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({
      keys: [key, `${readOnlyKey}:webhooks.read`],
      allowPrivateTargets: true,
      retrySchedule: [0.02],
      attemptTimeoutMs: 1000,
      queueDelayMs: 10,
      queuedSendThreshold: 1,
      seed: 5,
    });
    const logger = createLogger({ level: 'trace', destination: { write: (l: string) => void logLines.push(l) } });
    client = createApiClient({ baseUrl: sandbox.url, apiKey: key, logger });
  });
  afterAll(async () => {
    await client?.close();
    await sandbox?.close();
  });

  it('me', async () => {
    const me = await client.me();
    expect(me).toMatchObject({ organization_id: expect.any(String), plane: 'sandbox', approved: true });
    expect(me.scopes).toContain('webhooks.write');
  });

  it('documents.upload, correspondence.create (direct and queued) and correspondence.get', async () => {
    const doc = await client.documents.upload({
      filename: 'payslip.pdf',
      media_type: 'application/pdf',
      content_base64: Buffer.from('%PDF-1.7').toString('base64'),
    });
    expect(doc.document_id).toBeTruthy();
    const direct = await client.correspondence.create({
      kind: 'letter',
      subject: 'Payslip',
      content_type: 'payslip',
      document_ids: [doc.document_id],
      recipients: [recipient(1)],
    });
    expect(direct.queued).toBe(false);
    expect(direct.participants).toHaveLength(1);
    const queued = await client.correspondence.create({
      kind: 'letter',
      subject: 'Notice',
      content_type: 'notice',
      document_ids: [],
      recipients: [recipient(2), recipient(3)],
    });
    expect(queued.queued).toBe(true);
    expect(queued.participants.every((p) => p.state === 'pending')).toBe(true);
    const read = await client.correspondence.get(direct.correspondence_id);
    expect(read).toMatchObject({ correspondence_id: direct.correspondence_id, document_ids: [doc.document_id] });
    expect(read.participants.map((p) => p.ref)).toEqual(['emp-1']);
    // A direct send announces no counts (only a queued send's send_completed does).
    expect(read.send_summary).toBeNull();
  });

  it('the same Idempotency-Key gives the same correspondence', async () => {
    const input = { kind: 'letter', subject: 'Once', content_type: 'c', document_ids: [], recipients: [recipient(4)] };
    const a = await client.correspondence.create(input, { idempotencyKey: 'sandbox-idem-1' });
    const b = await client.correspondence.create(input, { idempotencyKey: 'sandbox-idem-1' });
    expect(b.correspondence_id).toBe(a.correspondence_id);
  });

  it('plans.run', async () => {
    const run = await client.plans.run('plan_onboarding', {});
    expect(run.accepted).toBe(true);
    expect(run.body).toMatchObject({ plan_id: 'plan_onboarding' });
  });

  it('apiKeys.rotate', async () => {
    const res = await request(`${sandbox.apiUrl}/api-keys`, { headers: { authorization: `Bearer ${key}` } });
    const { api_keys } = (await res.body.json()) as { api_keys: Array<{ key_id: string; scopes: string[] }> };
    const target = api_keys.find((k) => k.scopes.length === 1)!;
    const rotated = await client.apiKeys.rotate(target.key_id, { grace_seconds: 60 });
    expect(rotated.secret).toMatch(/^svc_sandbox_/);
    expect(rotated.secret).not.toBe(readOnlyKey);
  });

  it('webhook endpoints: create, list, iterate, update, test, rotate-secret, delete', async () => {
    const created = await client.webhookEndpoints.create({ url: 'http://127.0.0.1:9/hook-a', events: ['participant.acted'] });
    expect(created.secret).toMatch(/\S{16,}/);
    const second = await client.webhookEndpoints.create({ url: 'http://127.0.0.1:9/hook-b', events: ['claim.claimed'] });
    const page = await client.webhookEndpoints.list({ limit: 1 });
    expect(page.items).toHaveLength(1);
    expect(page.nextCursor).not.toBeNull();
    expect(JSON.stringify(page)).not.toContain(created.secret);
    const all: string[] = [];
    for await (const e of client.webhookEndpoints.iterate({ limit: 1 })) all.push(e.endpoint_id);
    expect(all).toEqual(expect.arrayContaining([created.endpoint_id, second.endpoint_id]));

    const updated = await client.webhookEndpoints.update(created.endpoint_id, { events: ['participant.acted', 'correspondence.sealed'] });
    expect(updated?.events).toEqual(['participant.acted', 'correspondence.sealed']);
    const test = await client.webhookEndpoints.test(created.endpoint_id);
    expect(test).toMatchObject({ event_type: 'webhook.test' });
    const rotated = await client.webhookEndpoints.rotateSecret(created.endpoint_id);
    expect(rotated.endpoint_id).toBe(created.endpoint_id);
    expect(rotated.secret).not.toBe(created.secret);

    await client.webhookEndpoints.delete(second.endpoint_id);
    const after: string[] = [];
    for await (const e of client.webhookEndpoints.iterate()) after.push(e.endpoint_id);
    expect(after).not.toContain(second.endpoint_id);
    expect(((await caught(client.webhookEndpoints.delete(second.endpoint_id))) as ApiError).code).toBe('not_found');
  });

  it('webhook deliveries: filtered pages, walked to the end', async () => {
    const ep = await client.webhookEndpoints.create({ url: 'http://127.0.0.1:9/never', events: ['participant.acted'] });
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 7, status: 'dead' });
    sandbox.control.seedDeliveries({ endpointId: ep.endpoint_id, count: 3, status: 'delivered' });
    const page = await client.webhookDeliveries.list({ status: 'dead', endpoint_id: ep.endpoint_id, limit: 3 });
    expect(page.items).toHaveLength(3);
    expect(page.nextCursor).not.toBeNull();
    const dead: string[] = [];
    for await (const d of client.webhookDeliveries.iterate({ status: 'dead', endpoint_id: ep.endpoint_id, limit: 3 })) {
      expect(d).toMatchObject({ status: 'dead', endpoint_id: ep.endpoint_id });
      dead.push(d.delivery_id);
    }
    expect(dead).toHaveLength(7);
    expect(new Set(dead).size).toBe(7);
  });

  it('a key without the scope gets a 403 naming it', async () => {
    const limited = createApiClient({ baseUrl: sandbox.url, apiKey: readOnlyKey });
    try {
      // The read-only key was rotated above with a grace period; it still authenticates.
      expect((await limited.webhookEndpoints.list()).items.length).toBeGreaterThan(0);
      const err = (await caught(limited.webhookEndpoints.create({ url: 'http://127.0.0.1:9/x', events: [] }))) as ApiError;
      expect(err).toMatchObject({ code: 'insufficient_scope', status: 403, requiredScope: 'webhooks.write' });
      expect(err.message).toContain('webhooks.write');
      expect(JSON.stringify(err) + err.message).not.toContain(readOnlyKey);
    } finally {
      await limited.close();
    }
  });

  it('an unknown correspondence is not_found, and nothing anywhere carries the key', async () => {
    const err = (await caught(client.correspondence.get('cor_does_not_exist'))) as ApiError;
    expect(err.code).toBe('not_found');
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain(key);
  });
});
