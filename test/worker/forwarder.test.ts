import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { verifySignature } from '../../src/signature/index.js';
import { createForwarder, type Forwarder } from '../../src/worker/forwarder.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { countByStatus, envelope, inboxRow, insertEnvelopes, waitFor } from './support.js';

const SECRET = 'fwd_secret_for_tests_0123456789';

type Behaviour = 'ok' | '503' | '500' | '400' | 'hang' | 'reset';

/** The organisation's core: verifies the signature, then answers as the current behaviour says. */
function startCore(decide: (n: number) => Behaviour) {
  const received = new Map<string, number>();
  const outcomes: Behaviour[] = [];
  const problems: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const verified = verifySignature({
        header: req.headers['x-service-signature'],
        body,
        secrets: [SECRET],
        now: Math.floor(Date.now() / 1000),
        toleranceSeconds: 300,
      });
      const event = JSON.parse(body.toString('utf8')) as { event_id: string; type: string };
      if (!verified.ok) problems.push(`bad signature for ${event.event_id}: ${verified.reason}`);
      if (req.headers['x-service-event-id'] !== event.event_id || req.headers['x-service-event-type'] !== event.type)
        problems.push(`headers disagree with body for ${event.event_id}`);
      const behaviour = decide(outcomes.length);
      outcomes.push(behaviour);
      switch (behaviour) {
        case 'ok':
          received.set(event.event_id, (received.get(event.event_id) ?? 0) + 1);
          res.writeHead(204).end();
          return;
        case 'hang':
          return; // never answers; the forwarder's timeout must give up
        case 'reset':
          req.socket.destroy();
          return;
        default:
          res.writeHead(Number(behaviour), { 'content-type': 'text/plain' }).end(`core says ${behaviour}`);
      }
    });
  });
  return new Promise<{ url: string; received: Map<string, number>; outcomes: Behaviour[]; problems: string[]; close(): Promise<void> }>(
    (resolve) => {
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        resolve({
          url: `http://127.0.0.1:${port}/postroom-events`,
          received,
          outcomes,
          problems,
          close: () =>
            new Promise<void>((r) => {
              server.closeAllConnections();
              server.close(() => r());
            }),
        });
      });
    },
  );
}

describe('forwarder to a core that fails sometimes', () => {
  let store: TestStore;
  let postroom: Postroom | undefined;
  let forwarder: Forwarder | undefined;
  let core: Awaited<ReturnType<typeof startCore>> | undefined;

  beforeAll(async () => {
    store = await openDefaultTestStore();
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection');
  });
  afterEach(async () => {
    await postroom?.stop(2000);
    await forwarder?.close();
    await core?.close();
    postroom = forwarder = core = undefined;
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  /** `workerRetryMs`: the worker's backoff after a failed attempt (long by default, so a drain runs each event once). */
  function forwardTo(url: string, options: { attempts?: number; timeoutMs?: number; workerRetryMs?: number } = {}): Postroom {
    forwarder = createForwarder({
      url,
      secret: SECRET,
      timeoutMs: options.timeoutMs ?? 300,
      attempts: options.attempts ?? 3,
      retryBackoff: { baseDelayMs: 5, maxDelayMs: 20 },
    });
    const retry = options.workerRetryMs ?? 600_000;
    postroom = createPostroom({
      db: store.db,
      worker: {
        batchSize: 20,
        concurrency: 2,
        pollIntervalMs: 20,
        retryBackoff: { baseDelayMs: retry, maxDelayMs: retry },
        maxAttempts: 50,
      },
    });
    postroom.onEvery(forwarder.handler);
    return postroom;
  }

  it('delivers every verified event, signed, to a core that fails, hangs and resets at random; failures take the retry path', async () => {
    const pattern = fc.sample(fc.constantFrom<Behaviour>('ok', 'ok', 'ok', '503', '500', 'hang', 'reset', '400'), {
      numRuns: 500,
      seed: 3,
    });
    core = await startCore((n) => (n < pattern.length ? pattern[n]! : 'ok'));
    const events = [
      ...Array.from({ length: 60 }, (_, i) =>
        envelope(
          'participant.acted',
          { correspondence_id: `cor_${i % 7}`, participant_id: 'p', act: 'read', ref: 'r' },
          new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
        ),
      ),
      envelope('wallet.debited', { amount: 100, currency: 'NGN' }),
      envelope('correspondence.reminded', { correspondence_id: 'cor_1', note: 'a type postroom does not know yet' }),
    ];
    await insertEnvelopes(store.db, events);
    await forwardTo(core.url, { workerRetryMs: 30 }).start();
    await waitFor(async () => (await countByStatus(store.db)).processed === events.length, 'every event forwarded and processed', 50_000);

    expect(core.problems).toEqual([]);
    expect([...core.received.keys()].sort()).toEqual(events.map((e) => e.event_id).sort());
    // The core saw every kind of failure, and some events needed the worker's own retry.
    expect(new Set(core.outcomes)).toEqual(new Set(['ok', '503', '500', 'hang', 'reset', '400']));
    const retried = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM inbox WHERE attempts > 1');
    expect(retried.rows[0]!.n).toBeGreaterThan(0);
  });

  it("retries 5xx at once up to its attempts, then fails the event with the core's answer", async () => {
    core = await startCore(() => '503');
    const e = envelope('correspondence.sealed', { correspondence_id: 'cor_x' });
    await insertEnvelopes(store.db, [e]);
    await forwardTo(core.url, { attempts: 3 }).drain();
    expect(core.outcomes).toEqual(['503', '503', '503']);
    expect(await inboxRow(store.db, e.event_id)).toMatchObject({
      status: 'failed',
      last_error: expect.stringMatching(
        /^forward_failed: forwarding to http:\/\/127\.0\.0\.1:\d+\/postroom-events failed: HTTP 503: core says 503/,
      ),
    });
  });

  it('does not hammer a core that refuses the event (4xx): one request per attempt', async () => {
    core = await startCore(() => '400');
    const e = envelope('correspondence.sealed', { correspondence_id: 'cor_y' });
    await insertEnvelopes(store.db, [e]);
    await forwardTo(core.url, { attempts: 3 }).drain();
    expect(core.outcomes).toEqual(['400']);
    expect((await inboxRow(store.db, e.event_id)).status).toBe('failed');
  });

  it('gives up on a core that does not answer within its timeout', async () => {
    core = await startCore(() => 'hang');
    const e = envelope('correspondence.sealed', { correspondence_id: 'cor_z' });
    await insertEnvelopes(store.db, [e]);
    await forwardTo(core.url, { attempts: 2, timeoutMs: 200 }).drain();
    expect(core.outcomes).toEqual(['hang', 'hang']);
    expect(await inboxRow(store.db, e.event_id)).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/forward_failed/) });
  });

  it('keeps the secret out of errors and redacts credentials in the URL', async () => {
    core = await startCore(() => '500');
    const withCreds = core.url.replace('http://', 'http://user:pa55@');
    const e = envelope('correspondence.sealed', { correspondence_id: 'cor_c' });
    await insertEnvelopes(store.db, [e]);
    await forwardTo(withCreds, { attempts: 1 }).drain();
    const row = await inboxRow(store.db, e.event_id);
    expect(row.last_error).not.toMatch(/pa55|user|fwd_secret/);
  });
});
