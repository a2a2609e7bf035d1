import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { call, letter, NIN, sandbox } from './helpers.js';

/** Every read moves time on by a millisecond: two reads for one change can never agree by luck. */
function tickingClock(start = Date.parse('2026-03-01T09:00:00.000Z')): Clock {
  let t = start;
  return { now: () => t++ };
}

let sb: Sandbox;
const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  call(sb.url, method, path, { key: sb.apiKey, ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) });
const read = async (id: string) => (await api('GET', `/sender/v2/correspondence/${id}`)).body;
const data = (eventId: string) => sb.control.event(eventId).data;
const upload = async (name: string) =>
  (
    await api('POST', '/sender/v2/documents', {
      filename: name,
      media_type: 'text/plain',
      content_base64: Buffer.from(name).toString('base64'),
    })
  ).body.document_id as string;

beforeAll(async () => {
  sb = await sandbox({ clock: tickingClock(), queueDelayMs: 10 });
});
afterAll(() => sb.close());

describe('one instant per state change', () => {
  it('a file’s created_at, its correspondence.created `at` and data.created_at are the same instant', async () => {
    const c = (
      await api(
        'POST',
        '/sender/v2/correspondence',
        letter([
          { nin: NIN.delivered, ref: 'a' },
          { nin: NIN.held, ref: 'b' },
        ]),
      )
    ).body;
    const [created] = sb.control.events({ type: 'correspondence.created', correspondenceId: c.correspondence_id });
    const view = await read(c.correspondence_id);
    expect(created!.at).toBe(view.created_at);
    expect(c.created_at).toBe(view.created_at);
    expect(data(created!.event_id).created_at).toBe(view.created_at);
    // The deliveries of a direct send are part of the same change.
    const acted = sb.control.events({ type: 'participant.acted', correspondenceId: c.correspondence_id });
    expect(acted.map((e) => e.at)).toEqual([view.created_at]);
    expect(view.participants[0].last_act_at).toBe(view.created_at);
    expect(view.updated_at).toBe(view.created_at);
  });

  it('updated_at is the instant of the last change, the same as that change’s event', async () => {
    const c = (
      await api(
        'POST',
        '/sender/v2/correspondence',
        letter([
          { nin: NIN.delivered, ref: 'a' },
          { nin: NIN.held, ref: 'b' },
        ]),
      )
    ).body;
    const acted = (await api('POST', `/sandbox/participants/${c.participants[0].participant_id}/act`, { act: 'read' })).body.events[0];
    expect((await read(c.correspondence_id)).updated_at).toBe(acted.at);
    const verified = (await api('POST', `/sandbox/participants/${c.participants[1].participant_id}/verify`)).body.events[0];
    expect((await read(c.correspondence_id)).updated_at).toBe(verified.at);
    const attached = (await api('POST', `/sandbox/correspondence/${c.correspondence_id}/attach`)).body.event;
    expect((await read(c.correspondence_id)).updated_at).toBe(attached.at);
    const sealed = (await api('POST', `/sandbox/correspondence/${c.correspondence_id}/seal`)).body.event;
    const view = await read(c.correspondence_id);
    expect(view.updated_at).toBe(sealed.at);
    expect(view.updated_at > view.created_at).toBe(true);
  });

  it('a queued send drains in one instant: deliveries and send_completed share it, and it is the file’s updated_at', async () => {
    const c = (
      await api(
        'POST',
        '/sender/v2/correspondence',
        letter([
          { nin: NIN.delivered, ref: 'a' },
          { nin: NIN.delivered, ref: 'b' },
        ]),
        { 'x-sandbox-send-mode': 'queued' },
      )
    ).body;
    await sb.control.waitForIdle();
    const events = sb.control.events({ correspondenceId: c.correspondence_id }).filter((e) => e.type !== 'correspondence.created');
    expect(events.map((e) => e.type)).toEqual(['participant.acted', 'participant.acted', 'correspondence.send_completed']);
    expect(new Set(events.map((e) => e.at)).size).toBe(1);
    expect((await read(c.correspondence_id)).updated_at).toBe(events[0]!.at);
  });
});

describe('documents on a file', () => {
  it('attaching a document already on the file is refused (409) and fires nothing; document_ids lists it once', async () => {
    const doc = await upload('once.txt');
    const c = (await api('POST', '/sender/v2/correspondence', letter([{ nin: NIN.delivered, ref: 'a' }]))).body;
    expect((await api('POST', `/sandbox/correspondence/${c.correspondence_id}/attach`, { document_id: doc })).status).toBe(200);
    const again = await api('POST', `/sandbox/correspondence/${c.correspondence_id}/attach`, { document_id: doc });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state');
    expect((await read(c.correspondence_id)).document_ids).toEqual([doc]);
    expect(sb.control.events({ type: 'document.attached', correspondenceId: c.correspondence_id })).toHaveLength(1);
  });

  it('a send naming a document twice lists it once', async () => {
    const doc = await upload('twice.txt');
    const c = (await api('POST', '/sender/v2/correspondence', letter([{ nin: NIN.delivered, ref: 'a' }], { document_ids: [doc, doc] })))
      .body;
    expect(c.document_ids).toEqual([doc]);
    expect((await read(c.correspondence_id)).document_ids).toEqual([doc]);
  });
});

describe('event payloads carry what a projection needs', () => {
  it('correspondence.created: content_type, document_ids and created_at besides the existing fields', async () => {
    const doc = await upload('payload.txt');
    const c = (
      await api(
        'POST',
        '/sender/v2/correspondence',
        letter([{ nin: NIN.delivered, ref: 'a' }], { content_type: 'application/pdf', document_ids: [doc] }),
      )
    ).body;
    const [created] = sb.control.events({ type: 'correspondence.created', correspondenceId: c.correspondence_id });
    expect(data(created!.event_id)).toEqual({
      correspondence_id: c.correspondence_id,
      kind: 'letter',
      subject: 'Your statement',
      status: 'live',
      content_type: 'application/pdf',
      document_ids: [doc],
      created_at: c.created_at,
      participants: [{ participant_id: c.participants[0].participant_id, ref: 'a', state: 'delivered' }],
    });
  });

  it('claim.claimed and claim.expired carry the participant’s ref', async () => {
    const c = (
      await api('POST', '/sender/v2/correspondence', {
        ...letter([]),
        recipients: [
          { addressing: { type: 'claim_code', name: 'A' }, ref: 'claim-a' },
          { addressing: { type: 'claim_code', name: 'B' }, ref: 'claim-b' },
        ],
      })
    ).body;
    const claims = sb.control.claims().filter((x) => x.correspondence_id === c.correspondence_id);
    const claimed = (await api('POST', `/sandbox/claims/${claims[0]!.claim_id}/claim`)).body.events[0];
    expect(data(claimed.event_id)).toEqual({
      claim_id: claims[0]!.claim_id,
      correspondence_id: c.correspondence_id,
      participant_id: claims[0]!.participant_id,
      ref: 'claim-a',
    });
    const expired = (await api('POST', `/sandbox/claims/${claims[1]!.claim_id}/expire`)).body.event;
    expect(data(expired.event_id)).toEqual({
      claim_id: claims[1]!.claim_id,
      correspondence_id: c.correspondence_id,
      participant_id: claims[1]!.participant_id,
      ref: 'claim-b',
    });
  });
});

describe('claims and queued sends at the end of a file', () => {
  it('a claim code lapses on a sealed file: claim.expired fires and the participant becomes undeliverable; it cannot be claimed after that', async () => {
    const c = (
      await api(
        'POST',
        '/sender/v2/correspondence',
        {
          ...letter([{ nin: NIN.delivered, ref: 'd' }]),
          recipients: [
            { addressing: { type: 'nin', nin: NIN.delivered }, ref: 'd' },
            { addressing: { type: 'claim_code', name: 'Late' }, ref: 'late' },
            { addressing: { type: 'claim_code', name: 'Later' }, ref: 'later' },
          ],
        },
        { 'x-sandbox-send-mode': 'queued' },
      )
    ).body;
    await sb.control.waitForIdle();
    expect((await api('POST', `/sandbox/correspondence/${c.correspondence_id}/seal`)).status).toBe(200);
    const [late, later] = sb.control.claims().filter((x) => x.correspondence_id === c.correspondence_id);
    expect((await api('POST', `/sandbox/claims/${late!.claim_id}/claim`)).status).toBe(409);
    const expired = await api('POST', `/sandbox/claims/${later!.claim_id}/expire`);
    expect(expired.status).toBe(200);
    expect(expired.body.event.type).toBe('claim.expired');
    const view = await read(c.correspondence_id);
    expect(view.status).toBe('sealed');
    expect(view.participants.map((p: { state: string }) => p.state)).toEqual(['delivered', 'held', 'undeliverable']);
    expect(view.updated_at).toBe(expired.body.event.at);
  });

  it('a queued send whose participants end held and undeliverable can be sealed once drained, and not before', async () => {
    // A queue that does not drain by itself, so "before" is certain however loaded the machine is.
    const slow = await sandbox({ queueDelayMs: 600_000 });
    try {
      const c = (
        await call(slow.url, 'POST', '/sender/v2/correspondence', {
          key: slow.apiKey,
          body: letter([
            { nin: NIN.held, ref: 'h' },
            { nin: NIN.undeliverable, ref: 'u' },
          ]),
          headers: { 'x-sandbox-send-mode': 'queued' },
        })
      ).body;
      const early = await call(slow.url, 'POST', `/sandbox/correspondence/${c.correspondence_id}/seal`, { key: slow.apiKey });
      expect(early.status).toBe(409);
      slow.control.completeSend(c.correspondence_id);
      expect((await call(slow.url, 'POST', `/sandbox/correspondence/${c.correspondence_id}/seal`, { key: slow.apiKey })).status).toBe(200);
      expect(slow.control.correspondence(c.correspondence_id)).toMatchObject({
        status: 'sealed',
        send_summary: { delivered: 0, held: 1, undeliverable: 1, total: 2 },
      });
    } finally {
      await slow.close();
    }
  });

  it('a queued send withdrawn before it drains never sends: its claim codes were never issued and cannot lapse (409)', async () => {
    // A queue that never drains during the test, so the withdrawal is surely first.
    const slow = await sandbox({ queueDelayMs: 600_000 });
    try {
      const c = (
        await call(slow.url, 'POST', '/sender/v2/correspondence', {
          key: slow.apiKey,
          body: { ...letter([]), recipients: [{ addressing: { type: 'claim_code', name: 'Gone' }, ref: 'gone' }] },
          headers: { 'x-sandbox-send-mode': 'queued' },
        })
      ).body;
      slow.control.withdraw(c.correspondence_id);
      const [claim] = slow.control.claims().filter((x) => x.correspondence_id === c.correspondence_id);
      const expire = await call(slow.url, 'POST', `/sandbox/claims/${claim!.claim_id}/expire`, { key: slow.apiKey });
      expect(expire.status).toBe(409);
      expect(slow.control.correspondence(c.correspondence_id).participants[0]!.state).toBe('pending');
      expect(slow.control.events({ type: 'correspondence.send_completed', correspondenceId: c.correspondence_id })).toHaveLength(0);
    } finally {
      await slow.close();
    }
  });
});
