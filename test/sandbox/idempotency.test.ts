import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createIdempotencyStore } from '../../src/sandbox/idempotency.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { call, letter, NIN, sandbox } from './helpers.js';

const SANDBOX = 'svc_sandbox_idem';
const LIVE = 'svc_live_idem';
const LIVE_OTHER = 'svc_live_idem_other';

let sb: Sandbox;
beforeAll(async () => {
  sb = await sandbox({ keys: [SANDBOX, LIVE, LIVE_OTHER] });
});
afterAll(() => sb.close());

const send = (key: string, idem: string, body: unknown) =>
  call(sb.url, 'POST', '/sender/v2/correspondence', { key, body, headers: { 'idempotency-key': idem } });

describe('Idempotency-Key is scoped per organisation and plane', () => {
  it('the same key and body on both planes creates two files and debits the live wallet once', async () => {
    const body = letter([
      { nin: NIN.delivered, ref: 'a' },
      { nin: NIN.delivered, ref: 'b' },
    ]);
    const before = sb.control.wallet();
    const onSandbox = await send(SANDBOX, 'same-key-both-planes', body);
    const onLive = await send(LIVE, 'same-key-both-planes', body);
    expect(onSandbox.status).toBe(201);
    expect(onLive.status).toBe(201);
    expect(onLive.headers['idempotent-replayed']).toBeUndefined();
    expect(onLive.body.correspondence_id).not.toBe(onSandbox.body.correspondence_id);
    expect(sb.control.wallet().balance).toBe(before.balance - 2 * before.price_per_recipient);

    // A retry on the live plane replays the live file, with no second debit, even with another key of the plane.
    const again = await send(LIVE_OTHER, 'same-key-both-planes', body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.correspondence_id).toBe(onLive.body.correspondence_id);
    expect(sb.control.wallet().balance).toBe(before.balance - 2 * before.price_per_recipient);
    expect(sb.control.events({ type: 'wallet.debited', correspondenceId: onLive.body.correspondence_id })).toHaveLength(1);
    expect(sb.control.events({ type: 'wallet.debited', correspondenceId: onSandbox.body.correspondence_id })).toHaveLength(0);

    const sandboxAgain = await send(SANDBOX, 'same-key-both-planes', body);
    expect(sandboxAgain.body.correspondence_id).toBe(onSandbox.body.correspondence_id);
  });
});

describe('bodies are compared as parsed JSON', () => {
  it('the same object with its keys in another order replays; another array order is a different request', async () => {
    const body = {
      kind: 'letter',
      subject: 'Order',
      content_type: 'text/plain',
      document_ids: [],
      recipients: [
        { addressing: { type: 'nin', nin: NIN.delivered }, ref: 'x' },
        { addressing: { type: 'nin', nin: NIN.held }, ref: 'y' },
      ],
    };
    const reordered = {
      recipients: [
        { ref: 'x', addressing: { nin: NIN.delivered, type: 'nin' } },
        { ref: 'y', addressing: { nin: NIN.held, type: 'nin' } },
      ],
      document_ids: [],
      content_type: 'text/plain',
      subject: 'Order',
      kind: 'letter',
    };
    const first = await send(SANDBOX, 'reordered-keys', body);
    const second = await send(SANDBOX, 'reordered-keys', reordered);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.correspondence_id).toBe(first.body.correspondence_id);
    // Same bytes with insignificant whitespace are the same request too.
    const spaced = await call(sb.url, 'POST', '/sender/v2/correspondence', {
      key: SANDBOX,
      rawBody: JSON.stringify(body, null, 2),
      headers: { 'content-type': 'application/json', 'idempotency-key': 'reordered-keys' },
    });
    expect(spaced.body.correspondence_id).toBe(first.body.correspondence_id);

    const swapped = await send(SANDBOX, 'reordered-keys', { ...body, recipients: [...body.recipients].reverse() });
    expect(swapped.status).toBe(422);
    expect(swapped.body.error.code).toBe('idempotency_key_reused');
  });

  it('property: any permutation of object keys, at any depth, replays; any changed value is refused', async () => {
    const shuffle = (v: unknown, rnd: () => number): unknown => {
      if (Array.isArray(v)) return v.map((x) => shuffle(x, rnd));
      if (v !== null && typeof v === 'object') {
        const entries = Object.entries(v as Record<string, unknown>);
        for (let i = entries.length - 1; i > 0; i--) {
          const j = Math.floor(rnd() * (i + 1));
          [entries[i], entries[j]] = [entries[j]!, entries[i]!];
        }
        return Object.fromEntries(entries.map(([k, x]) => [k, shuffle(x, rnd)]));
      }
      return v;
    };
    const body = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1, maxKeys: 6 });
    await fc.assert(
      fc.asyncProperty(body, fc.integer(), async (raw, seed) => {
        // Through JSON, as the request body arrives.
        const request = JSON.parse(JSON.stringify(raw)) as Record<string, unknown>;
        let s = seed >>> 0;
        const rnd = (): number => {
          s = (Math.imul(s, 1103515245) + 12345) >>> 0;
          return s / 2 ** 32;
        };
        const store = createIdempotencyStore({ clock: systemClock });
        let runs = 0;
        const op = async () => ({ status: 201, body: { n: ++runs } });
        await store.run('POST /x', 'k', request, op);
        const replay = await store.run('POST /x', 'k', JSON.parse(JSON.stringify(shuffle(request, rnd))), op);
        expect(replay.replayed).toBe(true);
        expect(runs).toBe(1);
        // Keys are at most 6 characters, so this one is new: the body differs.
        const changed = { ...request, added_by_the_test: 1 };
        await expect(store.run('POST /x', 'k', changed, op)).rejects.toMatchObject({ code: 'idempotency_key_reused' });
      }),
      { numRuns: 200 },
    );
  });
});
