import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { call, captureServer, letter, NIN, sandbox, type CaptureServer } from './helpers.js';

// The spec: the sandbox plane "acts on synthetic data only" and the key sent selects the plane,
// so each plane sees only its own correspondence, documents, endpoints and deliveries.
const SANDBOX = 'svc_sandbox_planes';
const LIVE = 'svc_live_planes';
const EVERY_TYPE = ['correspondence.created', 'participant.acted', 'wallet.debited', 'document.attached'];

let sb: Sandbox;
let liveHook: CaptureServer;
let sandboxHook: CaptureServer;
const of: Record<'sandbox' | 'live', { key: string; doc: string; file: string; endpoint: string; otherKey: string }> = {} as never;

const api = (key: string, method: string, path: string, body?: unknown) =>
  call(sb.url, method, path, { key, ...(body === undefined ? {} : { body }) });

beforeAll(async () => {
  liveHook = await captureServer();
  sandboxHook = await captureServer();
  sb = await sandbox({ keys: [SANDBOX, LIVE] });
  for (const [plane, key, hook, otherKey] of [
    ['sandbox', SANDBOX, sandboxHook, LIVE],
    ['live', LIVE, liveHook, SANDBOX],
  ] as const) {
    const endpoint = (await api(key, 'POST', '/sender/v2/webhook-endpoints', { url: hook.url, events: EVERY_TYPE })).body.endpoint_id;
    const doc = (
      await api(key, 'POST', '/sender/v2/documents', {
        filename: `${plane}.txt`,
        media_type: 'text/plain',
        content_base64: Buffer.from(plane).toString('base64'),
      })
    ).body.document_id;
    const file = (
      await api(key, 'POST', '/sender/v2/correspondence', letter([{ nin: NIN.delivered, ref: `${plane}-r` }], { document_ids: [doc] }))
    ).body.correspondence_id;
    of[plane] = { key, doc, file, endpoint, otherKey };
  }
  await sb.control.waitForIdle();
});
afterAll(async () => {
  await sb.close();
  await liveHook.close();
  await sandboxHook.close();
});

describe.each(['sandbox', 'live'] as const)('a %s-plane resource is invisible to the other plane', (plane) => {
  it('correspondence: 404 to the other plane', async () => {
    const { file, otherKey, key } = of[plane];
    expect((await api(key, 'GET', `/sender/v2/correspondence/${file}`)).status).toBe(200);
    const res = await api(otherKey, 'GET', `/sender/v2/correspondence/${file}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('documents: 404 to read, and unknown when the other plane names it in a send', async () => {
    const { doc, otherKey } = of[plane];
    expect((await api(otherKey, 'GET', `/sender/v2/documents/${doc}`)).status).toBe(404);
    const send = await api(
      otherKey,
      'POST',
      '/sender/v2/correspondence',
      letter([{ nin: NIN.delivered, ref: 'x' }], { document_ids: [doc] }),
    );
    expect(send.status).toBe(422);
    expect(send.body.error.code).toBe('unknown_document');
  });

  it('webhook endpoints: not listed, and 404 to read, change, test, re-secret or delete', async () => {
    const { endpoint, otherKey } = of[plane];
    const listed = await api(otherKey, 'GET', '/sender/v2/webhook-endpoints');
    expect(listed.body.endpoints.map((e: { endpoint_id: string }) => e.endpoint_id)).not.toContain(endpoint);
    expect((await api(otherKey, 'GET', `/sender/v2/webhook-endpoints/${endpoint}`)).status).toBe(404);
    expect((await api(otherKey, 'PATCH', `/sender/v2/webhook-endpoints/${endpoint}`, { events: [] })).status).toBe(404);
    expect((await api(otherKey, 'POST', `/sender/v2/webhook-endpoints/${endpoint}/test`)).status).toBe(404);
    expect((await api(otherKey, 'POST', `/sender/v2/webhook-endpoints/${endpoint}/rotate-secret`)).status).toBe(404);
    expect((await api(otherKey, 'DELETE', `/sender/v2/webhook-endpoints/${endpoint}`)).status).toBe(404);
    expect((await api(of[plane].key, 'GET', `/sender/v2/webhook-endpoints/${endpoint}`)).body.events).toEqual(EVERY_TYPE);
  });

  it('deliveries: not listed (not even filtered by the endpoint id) and 404 to read', async () => {
    const { endpoint, key, otherKey } = of[plane];
    const mine = (await api(key, 'GET', '/sender/v2/webhook-deliveries?limit=1000')).body.deliveries as Array<{
      delivery_id: string;
      endpoint_id: string;
    }>;
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((d) => d.endpoint_id === endpoint)).toBe(true);
    const theirs = (await api(otherKey, 'GET', '/sender/v2/webhook-deliveries?limit=1000')).body.deliveries as Array<{
      delivery_id: string;
    }>;
    expect(theirs.map((d) => d.delivery_id)).not.toContain(mine[0]!.delivery_id);
    expect((await api(otherKey, 'GET', `/sender/v2/webhook-deliveries?endpoint_id=${endpoint}`)).body.deliveries).toEqual([]);
    expect((await api(otherKey, 'GET', `/sender/v2/webhook-deliveries/${mine[0]!.delivery_id}`)).status).toBe(404);
  });
});

describe('events go only to endpoints of their plane', () => {
  it('each receiver gets its own plane’s events; wallet.debited only on the live plane', () => {
    const files = (hook: CaptureServer) => new Set(hook.received.map((c) => c.event.data.correspondence_id));
    expect([...files(sandboxHook)]).toEqual([of.sandbox.file]);
    expect([...files(liveHook)]).toEqual([of.live.file]);
    expect(liveHook.received.map((c) => c.event.type)).toContain('wallet.debited');
    expect(sandboxHook.received.map((c) => c.event.type)).not.toContain('wallet.debited');
  });
});

describe('the control routes create on the plane of the key that asks', () => {
  it('an endpoint registered with a live key is a live endpoint; a trigger with a live key makes live files', async () => {
    const ep = await api(LIVE, 'POST', '/sandbox/endpoints', { url: 'http://127.0.0.1:9/control' });
    expect(ep.status).toBe(201);
    expect((await api(LIVE, 'GET', `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`)).status).toBe(200);
    expect((await api(SANDBOX, 'GET', `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`)).status).toBe(404);
    const fired = await api(LIVE, 'POST', '/sandbox/trigger', { type: 'correspondence.created' });
    const file = fired.body.fired[0].correspondence_id;
    expect((await api(LIVE, 'GET', `/sender/v2/correspondence/${file}`)).status).toBe(200);
    expect((await api(SANDBOX, 'GET', `/sender/v2/correspondence/${file}`)).status).toBe(404);
    await api(LIVE, 'DELETE', `/sender/v2/webhook-endpoints/${ep.body.endpoint_id}`);
  });
});
