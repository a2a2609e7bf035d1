import { afterEach, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/signature/index.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { call, captureServer, sandbox, type CaptureServer } from './helpers.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

async function setup(
  options: SandboxOptions,
  respond?: Parameters<typeof captureServer>[0],
  events?: string[],
): Promise<{ sb: Sandbox; rx: CaptureServer; endpointId: string; secret: string }> {
  const rx = await captureServer(respond);
  open.push(rx);
  const sb = await sandbox(options);
  open.push(sb);
  const ep = await sb.control.registerEndpoint({ url: rx.url, ...(events ? { events } : {}) });
  return { sb, rx, endpointId: ep.endpoint_id, secret: ep.secret };
}

/** Position of each event in generation order. */
const positions = (sb: Sandbox): Map<string, number> => new Map(sb.control.events().map((e, i) => [e.event_id, i]));

describe('envelopes, headers and signatures', () => {
  it('sends the spec envelope with its three headers, signed over the raw body', async () => {
    const { sb, rx, secret } = await setup({});
    sb.control.trigger('correspondence.created');
    await sb.control.waitForIdle();
    expect(rx.received.length).toBe(3);
    for (const c of rx.received) {
      expect(Object.keys(c.event)).toEqual(['event_id', 'type', 'at', 'data']);
      expect(c.headers['content-type']).toBe('application/json');
      expect(c.headers['x-service-event-id']).toBe(c.event.event_id);
      expect(c.headers['x-service-event-type']).toBe(c.event.type);
      expect(c.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      const v = verifySignature({
        header: c.headers['x-service-signature'],
        body: c.raw,
        secrets: [secret],
        now: Math.floor(Date.now() / 1000),
        toleranceSeconds: 300,
      });
      expect(v.ok).toBe(true);
    }
    const [created, acted] = rx.received;
    expect(created!.event.type).toBe('correspondence.created');
    expect(created!.event.data).toMatchObject({
      correspondence_id: expect.stringMatching(/^cor_/),
      status: 'live',
      participants: [expect.objectContaining({ state: 'delivered' }), expect.anything()],
    });
    expect(acted!.event.data).toEqual({
      correspondence_id: created!.event.data.correspondence_id,
      participant_id: expect.stringMatching(/^par_/),
      act: 'delivered',
      ref: expect.any(String),
    });
  });

  it('signs `<t>.<body>` with the timestamp.body scheme', async () => {
    const { sb, rx, secret } = await setup({ signedPayload: 'timestamp.body' });
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    const c = rx.received[0]!;
    const now = Math.floor(Date.now() / 1000);
    expect(
      verifySignature({
        header: c.headers['x-service-signature'],
        body: c.raw,
        secrets: [secret],
        now,
        toleranceSeconds: 300,
        scheme: 'timestamp.body',
      }).ok,
    ).toBe(true);
    expect(
      verifySignature({
        header: c.headers['x-service-signature'],
        body: c.raw,
        secrets: [secret],
        now,
        toleranceSeconds: 300,
        scheme: 'body',
      }).ok,
    ).toBe(false);
  });

  it('delivers only subscribed types, and webhook.test whatever the subscription', async () => {
    const { sb, rx, endpointId } = await setup({}, undefined, ['correspondence.sealed']);
    sb.control.trigger('correspondence.sealed');
    sb.control.trigger('participant.acted');
    await sb.control.waitForIdle();
    expect(rx.received.map((c) => c.event.type)).toEqual(['correspondence.sealed']);
    await sb.control.registerEndpoint({ url: 'http://127.0.0.1:9/other', events: [] });
    sb.control.trigger('webhook.test');
    await sb.control.waitForIdle();
    const test = rx.received.find((c) => c.event.type === 'webhook.test')!;
    expect(test.event.data).toEqual({ message: expect.stringContaining(endpointId) });
    expect(sb.control.deliveries({ endpointId }).deliveries.map((d) => d.event_type)).toEqual(['correspondence.sealed', 'webhook.test']);
  });
});

describe('retries', () => {
  it('retries a failing endpoint on the schedule and ends dead with last_error', async () => {
    const { sb, rx, endpointId } = await setup({ retrySchedule: [0.01, 0.02, 0.04] }, () => 500, ['campaign.status_changed']);
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    const [d] = sb.control.deliveries({ endpointId }).deliveries;
    expect(d).toMatchObject({ status: 'dead', attempts: 4, delivered_at: null });
    expect(d!.last_error).toMatch(/^HTTP 500/);
    expect(rx.received).toHaveLength(4);
    expect(new Set(rx.received.map((c) => c.event.event_id))).toEqual(new Set([d!.event_id]));
  });

  it('delivers after transient failures, clearing last_error', async () => {
    const { sb, rx, endpointId } = await setup({ retrySchedule: [0.01, 0.01, 0.01] }, (_c, i) => (i < 2 ? 503 : 200), [
      'campaign.status_changed',
    ]);
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    expect(sb.control.deliveries({ endpointId }).deliveries[0]).toMatchObject({
      status: 'delivered',
      attempts: 3,
      last_error: '',
      delivered_at: expect.any(String),
    });
    expect(rx.received).toHaveLength(3);
  });

  it('counts a slow reply as a failed attempt', async () => {
    let release: () => void = () => undefined;
    const hang = new Promise<number>((resolve) => (release = () => resolve(200)));
    const { sb, endpointId } = await setup({ retrySchedule: [], attemptTimeoutMs: 100 }, () => hang, ['campaign.status_changed']);
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    release();
    const [d] = sb.control.deliveries({ endpointId }).deliveries;
    expect(d).toMatchObject({ status: 'dead', attempts: 1 });
    expect(d!.last_error).toMatch(/^timeout/);
  });

  it('reports a refused connection, and an endpoint deleted before its retry', async () => {
    const sb = await sandbox({ retrySchedule: [0.01] });
    open.push(sb);
    await sb.control.registerEndpoint({ url: 'http://127.0.0.1:9/nobody-listens', events: ['campaign.status_changed'] });
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    const [d] = sb.control.deliveries().deliveries;
    expect(d).toMatchObject({ status: 'dead', attempts: 2 });
    expect(d!.last_error).toMatch(/^connection error: ECONNREFUSED/);

    const slow = await sandbox({ retrySchedule: [0.5] });
    open.push(slow);
    const rx = await captureServer(() => 500);
    open.push(rx);
    const gone = await slow.control.registerEndpoint({ url: rx.url, events: ['campaign.status_changed'] });
    slow.control.trigger('campaign.status_changed');
    await rx.waitFor(1);
    expect((await call(slow.url, 'DELETE', `/sender/v2/webhook-endpoints/${gone.endpoint_id}`, { key: slow.apiKey })).status).toBe(204);
    await slow.control.waitForIdle();
    expect(slow.control.deliveries().deliveries[0]).toMatchObject({
      status: 'dead',
      attempts: 1,
      last_error: 'endpoint deleted before the event could be delivered',
    });
  });

  it('closes promptly with retries still scheduled', async () => {
    const { sb } = await setup({ retrySchedule: [60] }, () => 500);
    sb.control.trigger('correspondence.created', { count: 3 });
    await new Promise((r) => setTimeout(r, 50));
    await sb.close();
    expect(sb.control.stats().deliveries.pending).toBe(9);
  });
});

describe('fault injection under a fixed seed', () => {
  const run = async (options: SandboxOptions, count = 30) => {
    // A generous attempt timeout: on a loaded machine a timed-out attempt is retried, and a retry's
    // fault decisions (drawn for its attempt number) are not the first attempt's.
    const { sb, rx } = await setup({ retrySchedule: [0.01, 0.01, 0.01, 0.01], attemptTimeoutMs: 60_000, ...options }, undefined, [
      'campaign.status_changed',
    ]);
    sb.control.trigger('campaign.status_changed', { count });
    await sb.control.waitForIdle();
    const pos = positions(sb);
    const received = new Map<number, number>();
    for (const c of rx.received) received.set(pos.get(c.event.event_id)!, (received.get(pos.get(c.event.event_id)!) ?? 0) + 1);
    return { sb, rx, pos, received };
  };

  it('sends duplicates, the same ones for the same seed, and records them as extra attempts', async () => {
    const a = await run({ seed: 42, faults: { duplicateRate: 0.3 } });
    const b = await run({ seed: 42, faults: { duplicateRate: 0.3 } });
    const c = await run({ seed: 7, faults: { duplicateRate: 0.3 } });
    // The events the sandbox chose to send twice on their first attempt: a function of the seed alone.
    const dupes = (r: typeof a): number[] =>
      r.sb.control
        .faultLog()
        .filter((f) => f.fault === 'duplicate' && f.attempt === 1)
        .map((f) => r.pos.get(f.event_id)!)
        .sort((x, y) => x - y);
    expect(dupes(a).length).toBeGreaterThan(0);
    expect(a.received.size).toBe(30);
    expect(dupes(b)).toEqual(dupes(a));
    expect(dupes(c)).not.toEqual(dupes(a));
    for (const d of a.sb.control.deliveries().deliveries) {
      const i = a.pos.get(d.event_id)!;
      expect(d.status).toBe('delivered');
      expect(d.attempts).toBe(a.received.get(i));
    }
    expect(a.sb.control.faultLog().filter((f) => f.fault === 'duplicate').length).toBe(a.rx.received.length - 30);
  });

  it('reorders: held-back deliveries arrive after later events, the same ones for the same seed', async () => {
    const options: SandboxOptions = { seed: 42, maxConcurrency: 1, faults: { reorderRate: 0.3, reorderDelayMs: 1_000 } };
    const a = await run(options, 20);
    const b = await run(options, 20);
    const heldBack = (r: typeof a): number[] =>
      r.sb.control
        .faultLog()
        .filter((f) => f.fault === 'held_back')
        .map((f) => r.pos.get(f.event_id)!)
        .sort((x, y) => x - y);
    const held = heldBack(a);
    expect(held.length).toBeGreaterThan(0);
    expect(heldBack(b)).toEqual(held);
    const arrival = a.rx.received.map((c) => a.pos.get(c.event.event_id)!);
    const notHeld = [...Array(20).keys()].filter((i) => !held.includes(i));
    expect(arrival).toEqual([...notHeld, ...held]);
    expect(arrival).not.toEqual([...Array(20).keys()]);
  });

  it('drops attempts (retried), and every attempt is either a drop or a request the receiver saw', async () => {
    const a = await run({ seed: 3, faults: { dropRate: 0.4 } });
    const drops = a.sb.control.faultLog().filter((f) => f.fault === 'drop');
    expect(drops.length).toBeGreaterThan(0);
    for (const d of a.sb.control.deliveries().deliveries) {
      const i = a.pos.get(d.event_id)!;
      const dropped = drops.filter((f) => f.delivery_id === d.delivery_id).length;
      expect(d.attempts).toBe(dropped + (a.received.get(i) ?? 0));
      if (d.status === 'dead') expect(d.last_error).toMatch(/drop/);
    }
    const b = await run({ seed: 3, faults: { dropRate: 0.4 } });
    expect(b.sb.control.deliveries().deliveries.map((d) => [b.pos.get(d.event_id), d.status, d.attempts])).toEqual(
      a.sb.control.deliveries().deliveries.map((d) => [a.pos.get(d.event_id), d.status, d.attempts]),
    );
  });

  it('forces failures for a share of deliveries: they end dead and never reach the receiver', async () => {
    const a = await run({ seed: 11, faults: { failShare: 0.25 } });
    const dead = a.sb.control.deliveries({ status: 'dead' }).deliveries;
    expect(dead.length).toBeGreaterThan(0);
    expect(dead.length).toBeLessThan(30);
    for (const d of dead) {
      expect(a.received.has(a.pos.get(d.event_id)!)).toBe(false);
      expect(d.last_error).toMatch(/forced failure/);
      expect(d.attempts).toBe(5);
    }
    expect(a.sb.control.deliveries({ status: 'delivered' }).deliveries.length + dead.length).toBe(30);
  });
});

describe('failure windows', () => {
  it('fails every attempt while open, so deliveries made in it go dead; delivery resumes when it closes', async () => {
    const { sb, rx, endpointId } = await setup({ retrySchedule: [0.01, 0.02] }, undefined, ['campaign.status_changed']);
    sb.control.trigger('campaign.status_changed', { count: 2 });
    await sb.control.waitForIdle();
    sb.control.openFailureWindow({ durationMs: 60_000 });
    sb.control.trigger('campaign.status_changed', { count: 3 });
    await sb.control.waitForIdle();
    sb.control.closeFailureWindow();
    sb.control.trigger('campaign.status_changed', { count: 2 });
    await sb.control.waitForIdle();
    const records = sb.control.deliveries({ endpointId }).deliveries;
    expect(records.map((d) => d.status)).toEqual(['delivered', 'delivered', 'dead', 'dead', 'dead', 'delivered', 'delivered']);
    for (const d of records.filter((r) => r.status === 'dead'))
      expect(d).toMatchObject({ attempts: 3, last_error: expect.stringMatching(/failure window/) });
    expect(rx.received).toHaveLength(4);
  });

  it('can target one endpoint, and is opened and closed over HTTP', async () => {
    const { sb, rx, endpointId } = await setup({ retrySchedule: [] }, undefined, ['campaign.status_changed']);
    const other = await captureServer();
    open.push(other);
    await sb.control.registerEndpoint({ url: other.url, events: ['campaign.status_changed'] });
    const opened = await call(sb.url, 'POST', '/sandbox/faults/failure-window', {
      key: sb.apiKey,
      body: { duration_ms: 60_000, endpoint_id: endpointId },
    });
    expect(opened.status).toBe(201);
    expect((await call(sb.url, 'GET', '/sandbox/faults', { key: sb.apiKey })).body.failure_window).toMatchObject({
      endpoint_id: endpointId,
    });
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    expect(rx.received).toHaveLength(0);
    expect(other.received).toHaveLength(1);
    expect((await call(sb.url, 'DELETE', '/sandbox/faults/failure-window', { key: sb.apiKey })).status).toBe(204);
    sb.control.trigger('campaign.status_changed');
    await sb.control.waitForIdle();
    expect(rx.received).toHaveLength(1);
  });

  it('sets fault rates at runtime over HTTP, refusing values out of range', async () => {
    const { sb } = await setup({});
    const ok = await call(sb.url, 'PATCH', '/sandbox/faults', {
      key: sb.apiKey,
      body: { duplicate_rate: 0.1, reorder_rate: 0.2, max_delay_ms: 5 },
    });
    expect(ok.body).toMatchObject({ duplicate_rate: 0.1, reorder_rate: 0.2, max_delay_ms: 5, drop_rate: 0 });
    expect(sb.control.faults()).toMatchObject({ duplicateRate: 0.1, reorderRate: 0.2, maxDelayMs: 5 });
    const bad = await call(sb.url, 'PATCH', '/sandbox/faults', { key: sb.apiKey, body: { drop_rate: 1.5 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('drop_rate');
  });
});
