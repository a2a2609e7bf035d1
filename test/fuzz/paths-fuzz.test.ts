import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { systemClock } from '../../src/clock.js';
import { createInboxWriter, type InboxWriter } from '../../src/inbox/group-commit.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { createIngressCore } from '../../src/ingress/accept.js';
import { createIngressRouter } from '../../src/ingress/router.js';
import { staticSecrets } from '../../src/secrets/secret-provider.js';
import { createLogger } from '../../src/logging/logger.js';
import { sign } from '../../src/signature/index.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { postEvent } from '../support/events.js';
import { captureLog } from '../support/log-capture.js';
import { BAD_TARGETS, METHODS, startHostApp } from '../support/host-app.js';
import { errorCode, rawRequest } from '../support/raw-http.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

/**
 * Hostile paths and headers against the standalone server and a host app that
 * mounts the router: the same answer from both, never a 5xx, and nothing an
 * unsigned sender can make us log above debug. Then signed values Postgres
 * cannot hold: the answer always says what the store kept.
 */
const pgUrl = await adminUrl();

const segmentChar = fc.constantFrom(
  ..."%%%ZZzz0123456789abcdefABCDEF._-~:@!$&'()*+,;=/?#".split(''),
  'é',
  '😀',
  '%C0',
  '%AE',
  '%E0%A4',
  '%F0%9F',
  '%00',
  '%2F',
  '%25',
);
// Mostly origin-form; sometimes absolute-form, which a server must accept and Express routes by its path.
const origin = fc.constantFrom('', '', '', '', 'http://127.0.0.1', 'HTTP://x:1', 'http://u@h', 'http://h?');
const target = fc
  .tuple(
    origin,
    fc.array(segmentChar, { maxLength: 24 }),
    fc.option(fc.array(fc.constantFrom(...'x=1&%ZZ;?#'.split('')), { maxLength: 8 })),
  )
  .map(([o, seg, query]) => `${o}/webhooks${seg.length ? '/' : ''}${seg.join('')}${query === null ? '' : `?${query.join('')}`}`)
  // A raw space or control would end the request line: Node answers 400 before any code of ours runs.
  // eslint-disable-next-line no-control-regex
  .filter((t) => !/[\s\x00-\x1f]/.test(t));
const tokenValue = fc.string({ unit: fc.constantFrom(...'abcdefxyz0123456789 =,;/+-_.:'.split('')), maxLength: 80 });
const headers = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'text/plain',
      '',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
    ),
    'content-encoding': fc.constantFrom('identity', 'gzip', 'br', 'IDENTITY', 'x-unknown', ''),
    'x-service-signature': fc.oneof(
      tokenValue,
      fc.constant(`t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`),
      fc.constant('x'.repeat(8000)),
    ),
    'x-service-event-id': tokenValue,
    'x-service-event-type': tokenValue,
    accept: fc.constantFrom('*/*', 'text/html', 'application/json;q=0'),
    'x-forwarded-for': tokenValue,
  },
  { requiredKeys: [] },
);

describe.skipIf(!pgUrl)('hostile paths and headers: standalone server and mounted router agree', () => {
  let store: TestStore;
  let standalone: RunningServer;
  let writer: InboxWriter;
  let host: { url: string; close(): Promise<void> };
  const standaloneLog = captureLog();
  const hostLog = captureLog();

  beforeAll(async () => {
    store = await openTestStore('postgres');
    standalone = await startReceiver({ db: store.db, logger: createLogger({ level: 'trace', destination: standaloneLog.stream }) });
    const logger = createLogger({ level: 'trace', destination: hostLog.stream });
    writer = createInboxWriter({ db: store.db, logger, maxBatch: 16, flushTimeoutMs: 5000 });
    const core = createIngressCore({
      writer,
      secrets: staticSecrets([TEST_SECRET]),
      clock: systemClock,
      logger,
      toleranceSeconds: 300,
      scheme: 'body',
      ackTimeoutMs: 5000,
    });
    host = await startHostApp(createIngressRouter({ core, logger, maxBodyBytes: 1024 * 1024 }));
  });
  afterAll(async () => {
    await host?.close();
    await writer?.close();
    await standalone?.close();
    await store?.cleanup();
  });

  it('same status and error code, never a 5xx, nothing logged above debug', async () => {
    const since = [standaloneLog.mark(), hostLog.mark()];
    const cases = fc.oneof(fc.constantFrom(...BAD_TARGETS), target);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...METHODS),
        cases,
        headers,
        fc.constantFrom('', '{}', '{"event_id":"e"}'),
        async (method, path, hs, body) => {
          const send = method === 'GET' || method === 'HEAD' ? '' : body;
          const a = await rawRequest(standalone.url, method, path, { headers: hs, body: send });
          const b = await rawRequest(host.url, method, path, { headers: hs, body: send });
          expect(a.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
          expect(a.status, `${method} ${path}`).toBeLessThan(500);
          expect({ status: b.status, code: errorCode(b) }, `${method} ${path} ${JSON.stringify(hs)}`).toEqual({
            status: a.status,
            code: errorCode(a),
          });
        },
      ),
      { numRuns: 600 },
    );
    for (const logged of since.map((s) => s())) {
      const loud = logged
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level > 20);
      expect(loud).toEqual([]);
    }
  });

  it('a signed body is answered with exactly what the store kept: "accepted" only for a stored received row', async () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const at = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }).map((y) => String(y).padStart(4, '0')),
        two(19),
        two(39),
        two(29),
        two(69),
        two(69),
        fc.constantFrom('Z', '+00:00', '-05:30', '+14:00', '+15:59', '+16:00', '-19:69'),
      )
      .map(([y, mo, d, h, mi, s, z]) => `${y}-${mo}-${d}T${h}:${mi}:${s}${z}`);
    const number = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
      fc
        .tuple(
          fc.integer({ min: 1, max: 9 }),
          fc.constantFrom('e', 'E'),
          fc.constantFrom('', '+', '-'),
          fc.integer({ min: 0, max: 200_000 }),
        )
        .map(([m, e, sign_, x]) => `${m}${e}${sign_}${x}`),
    );
    // The inside of a JSON string literal: ordinary text escaped, or escapes Postgres may refuse.
    const text = fc.oneof(
      fc.string({ maxLength: 20 }).map((t) => JSON.stringify(t).slice(1, -1)),
      fc.constantFrom('\\ud800', '\\udfff', '\\ud83d\\ude00', 'a\\u0000b', '\\u00e9'),
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(at, number, text, async (when, num, str) => {
        const id = `evt_fuzz_store_${Date.now()}_${n++}`;
        const body = `{"event_id":"${id}","type":"participant.acted","at":"${when}","data":{"correspondence_id":"cor_1","n":${num},"s":"${str}"}}`;
        const res = await postEvent(`${standalone.url}/webhooks`, null, {
          secret: TEST_SECRET,
          body,
          headers: { 'x-service-signature': sign({ secret: TEST_SECRET, body }) },
        });
        expect(res.status).toBe(200);
        const row = await getInboxEvent(store.db, id);
        expect(row, body).toBeDefined();
        expect({ answer: res.body.status, stored: row!.status }, body).toEqual(
          res.body.status === 'accepted' ? { answer: 'accepted', stored: 'received' } : { answer: 'quarantined', stored: 'quarantined' },
        );
      }),
      { numRuns: 400 },
    );
  });
});
