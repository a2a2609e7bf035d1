import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES, type Sandbox } from '../../src/sandbox/index.js';
import { call, letter, NIN, sandbox } from './helpers.js';

let sb: Sandbox;
const api = (method: string, path: string, body?: unknown) =>
  call(sb.url, method, path, { key: sb.apiKey, ...(body === undefined ? {} : { body }) });
const send = async (recipients: Array<{ nin: string; ref: string }>, mode: 'direct' | 'queued' = 'direct') =>
  (
    await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: sb.apiKey,
      body: letter(recipients),
      headers: { 'x-sandbox-send-mode': mode },
    })
  ).body;
const read = async (id: string) => (await api('GET', `/sender/v2/correspondence/${id}`)).body;

beforeAll(async () => {
  // Two cases act on a queued send before it drains: the delay must outlast one request on a loaded CI machine.
  sb = await sandbox({ queueDelayMs: 1500 });
});
afterAll(() => sb.close());

describe('participants', () => {
  it('a verified recipient gets every held item delivered, each firing participant.acted (delivered)', async () => {
    const nin = '55555555558';
    const a = await send([
      { nin, ref: 'held-a' },
      { nin: NIN.delivered, ref: 'other' },
    ]);
    const b = await send([{ nin, ref: 'held-b' }]);
    expect((await read(a.correspondence_id)).participants[0].state).toBe('held');

    const res = await api('POST', '/sandbox/recipients/verify', { addressing: { type: 'nin', nin } });
    expect(res.status).toBe(200);
    expect(res.body.participant_ids).toEqual([a.participants[0].participant_id, b.participants[0].participant_id]);
    expect(res.body.events.map((e: { type: string }) => e.type)).toEqual(['participant.acted', 'participant.acted']);
    expect(sb.control.event(res.body.events[0].event_id).data).toEqual({
      correspondence_id: a.correspondence_id,
      participant_id: a.participants[0].participant_id,
      act: 'delivered',
      ref: 'held-a',
    });
    const after = await read(a.correspondence_id);
    expect(after.participants[0]).toMatchObject({ state: 'delivered', last_act: 'delivered', last_act_at: res.body.events[0].at });
    // A direct send carries no summary (only queued sends announce counts), and delivery does not invent one.
    expect(after.send_summary).toBeNull();

    expect((await api('POST', '/sandbox/recipients/verify', { addressing: { type: 'nin', nin } })).body.participant_ids).toEqual([]);
    expect((await api('POST', '/sandbox/recipients/verify', { addressing: { type: 'nin', nin: '1' } })).status).toBe(400);
  });

  it('verifies one held participant by id, and e-mail recipients tagged +held', async () => {
    const c = (
      await call(sb.url, 'POST', '/sender/v2/correspondence', {
        key: sb.apiKey,
        body: { ...letter([]), recipients: [{ addressing: { type: 'email', email: 'ada+held@example.com' }, ref: 'ada' }] },
      })
    ).body;
    expect(c.participants[0].state).toBe('held');
    const res = await api('POST', `/sandbox/participants/${c.participants[0].participant_id}/verify`);
    expect(res.body.participant_ids).toEqual([c.participants[0].participant_id]);
    expect((await api('POST', `/sandbox/participants/${c.participants[0].participant_id}/verify`)).status).toBe(409);
  });

  it('acts: records last_act, fires participant.acted; submitted also fires form.response_received', async () => {
    const c = await send([
      { nin: NIN.delivered, ref: 'p1' },
      { nin: NIN.held, ref: 'p2' },
    ]);
    const [p1, p2] = c.participants;
    const read1 = await api('POST', `/sandbox/participants/${p1.participant_id}/act`, { act: 'approved' });
    expect(read1.body.events).toHaveLength(1);
    expect(sb.control.event(read1.body.events[0].event_id).data).toEqual({
      correspondence_id: c.correspondence_id,
      participant_id: p1.participant_id,
      act: 'approved',
      ref: 'p1',
    });
    const submitted = await api('POST', `/sandbox/participants/${p1.participant_id}/act`, { act: 'submitted' });
    expect(submitted.body.events.map((e: { type: string }) => e.type)).toEqual(['participant.acted', 'form.response_received']);
    expect(sb.control.event(submitted.body.events[1].event_id).data).toEqual({
      correspondence_id: c.correspondence_id,
      participant_id: p1.participant_id,
      response_id: expect.stringMatching(/^rsp_/),
    });
    expect((await read(c.correspondence_id)).participants[0]).toMatchObject({
      last_act: 'submitted',
      last_act_at: submitted.body.events[0].at,
    });

    const held = await api('POST', `/sandbox/participants/${p2.participant_id}/act`, { act: 'read' });
    expect(held.status).toBe(409);
    expect(held.body.error.code).toBe('invalid_state');
    const unknown = await api('POST', `/sandbox/participants/${p1.participant_id}/act`, { act: 'danced' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('act');
    expect((await api('POST', '/sandbox/participants/par_nope/act', { act: 'read' })).status).toBe(404);
  });
});

describe('file lifecycle', () => {
  it('seals into a covenant; nothing acts on a sealed file', async () => {
    const c = await send([{ nin: NIN.delivered, ref: 'x' }]);
    const sealed = await api('POST', `/sandbox/correspondence/${c.correspondence_id}/seal`);
    expect(sb.control.event(sealed.body.event.event_id).data).toEqual({
      correspondence_id: c.correspondence_id,
      covenant_id: expect.stringMatching(/^cov_/),
    });
    expect((await read(c.correspondence_id)).status).toBe('sealed');
    expect((await api('POST', `/sandbox/correspondence/${c.correspondence_id}/seal`)).status).toBe(409);
    expect((await api('POST', `/sandbox/correspondence/${c.correspondence_id}/withdraw`)).status).toBe(409);
    expect((await api('POST', `/sandbox/participants/${c.participants[0].participant_id}/act`, { act: 'read' })).status).toBe(409);
  });

  it('withdraws; a queued send withdrawn before it drains never completes', async () => {
    const q = await send([{ nin: NIN.delivered, ref: 'q' }], 'queued');
    const w = await api('POST', `/sandbox/correspondence/${q.correspondence_id}/withdraw`);
    expect(sb.control.event(w.body.event.event_id).data).toEqual({ correspondence_id: q.correspondence_id });
    await sb.control.waitForIdle();
    const after = await read(q.correspondence_id);
    expect(after).toMatchObject({ status: 'withdrawn', send_summary: null });
    expect(after.participants[0].state).toBe('pending');
    expect(sb.control.events({ correspondenceId: q.correspondence_id }).map((e) => e.type)).toEqual([
      'correspondence.created',
      'correspondence.withdrawn',
    ]);
  });

  it('refuses to seal a queued send before it completes', async () => {
    const q = await send([{ nin: NIN.delivered, ref: 'q' }], 'queued');
    expect((await api('POST', `/sandbox/correspondence/${q.correspondence_id}/seal`)).status).toBe(409);
    await sb.control.waitForIdle();
    expect((await api('POST', `/sandbox/correspondence/${q.correspondence_id}/seal`)).status).toBe(200);
  });

  it('attaches an uploaded document to a live file', async () => {
    const c = await send([{ nin: NIN.delivered, ref: 'x' }]);
    const doc = await api('POST', '/sender/v2/documents', {
      filename: 'addendum.pdf',
      media_type: 'application/pdf',
      content_base64: 'JVBERi0xLjQ=',
    });
    const res = await api('POST', `/sandbox/correspondence/${c.correspondence_id}/attach`, { document_id: doc.body.document_id });
    expect(sb.control.event(res.body.event.event_id).data).toEqual({
      correspondence_id: c.correspondence_id,
      document_id: doc.body.document_id,
    });
    expect((await read(c.correspondence_id)).document_ids).toEqual([doc.body.document_id]);
    expect((await api('POST', `/sandbox/correspondence/${c.correspondence_id}/attach`, { document_id: 'doc_nope' })).status).toBe(404);
  });
});

describe('claim codes', () => {
  it('a claim-code recipient is held until claimed (delivered) or expired (undeliverable)', async () => {
    const c = (
      await api('POST', '/sender/v2/correspondence', {
        ...letter([]),
        recipients: [
          { addressing: { type: 'claim_code', name: 'Ada' }, ref: 'ada' },
          { addressing: { type: 'claim_code', name: 'Bo' }, ref: 'bo' },
        ],
      })
    ).body;
    const claims = (await api('GET', '/sandbox/claims')).body.claims.filter(
      (x: { correspondence_id: string }) => x.correspondence_id === c.correspondence_id,
    );
    expect(claims).toHaveLength(2);
    const claimed = await api('POST', `/sandbox/claims/${claims[0].claim_id}/claim`);
    expect(claimed.body.events.map((e: { type: string }) => e.type)).toEqual(['claim.claimed', 'participant.acted']);
    expect(sb.control.event(claimed.body.events[0].event_id).data).toEqual({
      claim_id: claims[0].claim_id,
      correspondence_id: c.correspondence_id,
      participant_id: claims[0].participant_id,
      ref: expect.any(String),
    });
    const expired = await api('POST', `/sandbox/claims/${claims[1].claim_id}/expire`);
    expect(expired.body.event.type).toBe('claim.expired');
    expect((await read(c.correspondence_id)).participants.map((p: { state: string }) => p.state)).toEqual(['delivered', 'undeliverable']);
    expect((await api('POST', `/sandbox/claims/${claims[0].claim_id}/claim`)).status).toBe(409);
    // A held claim-code recipient is not released by verification.
    expect(sb.control.verifyRecipient({ type: 'claim_code', name: 'Ada' }).participant_ids).toEqual([]);
  });
});

describe('trigger and the state listings', () => {
  it('fires every event type over HTTP, each through a real change', async () => {
    for (const type of EVENT_TYPES) {
      if (type === 'webhook.test') await sb.control.registerEndpoint({ url: 'http://127.0.0.1:9/x', events: [] });
      const res = await api('POST', '/sandbox/trigger', { type, count: 2 });
      expect(res.status, type).toBe(200);
      expect(
        res.body.fired.map((e: { type: string }) => e.type),
        type,
      ).toEqual(type === 'webhook.test' ? expect.arrayContaining([type]) : [type, type]);
    }
    const bad = await api('POST', '/sandbox/trigger', { type: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('participant.acted');
    await sb.control.waitForIdle();
  });

  it('every event carries the data fields docs/events.md requires', () => {
    const required: Record<string, string[]> = {
      // content_type, document_ids and created_at: what a projection needs to build the file from the event alone.
      'correspondence.created': [
        'correspondence_id',
        'kind',
        'subject',
        'status',
        'participants',
        'content_type',
        'document_ids',
        'created_at',
      ],
      'correspondence.send_completed': ['correspondence_id', 'delivered', 'held', 'undeliverable', 'total'],
      'participant.acted': ['correspondence_id', 'participant_id', 'act', 'ref'],
      'document.attached': ['correspondence_id', 'document_id'],
      'form.response_received': ['correspondence_id', 'participant_id', 'response_id'],
      'correspondence.sealed': ['correspondence_id', 'covenant_id'],
      'correspondence.withdrawn': ['correspondence_id'],
      'claim.claimed': ['claim_id', 'correspondence_id', 'participant_id', 'ref'],
      'claim.expired': ['claim_id', 'correspondence_id', 'participant_id', 'ref'],
      'wallet.debited': ['amount', 'currency', 'correspondence_id', 'balance'],
      'campaign.status_changed': ['campaign_id', 'status'],
      'webhook.test': ['message'],
    };
    const seen = new Set<string>();
    for (const summary of sb.control.events()) {
      const { data, type } = sb.control.event(summary.event_id);
      expect(Object.keys(data).sort(), type).toEqual([...required[type]!].sort());
      seen.add(type);
      if (type === 'correspondence.created') {
        expect(data.status).toBe('live');
        for (const p of data.participants as Array<Record<string, unknown>>)
          expect(Object.keys(p).sort()).toEqual(['participant_id', 'ref', 'state']);
      }
      if (type === 'wallet.debited') expect(Number.isInteger(data.amount)).toBe(true);
    }
    expect(seen).toEqual(new Set(EVENT_TYPES));
  });

  it('lists every correspondence with full state, equal to the API read model', async () => {
    const all = (await api('GET', '/sandbox/correspondence')).body.correspondence;
    expect(all.length).toBe(sb.control.stats().correspondences);
    for (const c of all.slice(0, 10)) expect(await read(c.correspondence_id)).toEqual(c);
    expect(Object.keys(all[0]).sort()).toEqual([
      'content_type',
      'correspondence_id',
      'created_at',
      'document_ids',
      'kind',
      'participants',
      'send_summary',
      'status',
      'subject',
      'updated_at',
    ]);
  });

  it('lists every generated event in order, filterable, with details by id', async () => {
    const events = (await api('GET', '/sandbox/events')).body;
    expect(events.total).toBe(sb.control.stats().events);
    expect(Object.keys(events.events[0]).sort()).toEqual(['at', 'correspondence_id', 'event_id', 'type']);
    const ids = events.events.map((e: { event_id: string }) => e.event_id);
    expect([...ids].sort()).toEqual(ids);
    const sealed = (await api('GET', '/sandbox/events?type=correspondence.sealed')).body.events;
    expect(sealed.every((e: { type: string }) => e.type === 'correspondence.sealed')).toBe(true);
    const detail = (await api('GET', `/sandbox/events/${sealed[0].event_id}`)).body;
    expect(detail).toMatchObject({
      event_id: sealed[0].event_id,
      type: 'correspondence.sealed',
      data: { covenant_id: expect.any(String) },
    });
    expect((await api('GET', '/sandbox/events/evt_nope')).status).toBe(404);
  });

  it('reports stats and waits for idle over HTTP', async () => {
    const idle = await api('GET', '/sandbox/idle?timeout_ms=5000');
    expect(idle.status).toBe(200);
    expect(idle.body.stats).toMatchObject({ seed: 1, busy: 0, in_flight: 0 });
    expect((await api('GET', '/sandbox/idle?timeout_ms=0')).status).toBe(400);
  });
});
