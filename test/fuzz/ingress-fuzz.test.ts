import fs from 'node:fs';
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { sign } from '../../src/signature/index.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { freePort, spawnCli, waitForHttp, type CliProcess } from '../support/process.js';
import { TEST_SECRET } from '../support/receiver.js';

/**
 * Thousands of hostile requests against a real postroom process: nothing is
 * accepted unless correctly signed, nothing causes a 5xx while the store is up,
 * memory stays bounded, and a valid event is still accepted right after.
 */
const pgUrl = await adminUrl();
const LIMIT = 64 * 1024;

describe.skipIf(!pgUrl)('bad input against a running receiver', () => {
  let database: TestDatabase;
  let proc: CliProcess;
  let base: string;
  let hook: string;
  const statuses = new Map<number, number>();

  const rss = (): number => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${proc.child.pid}/status`, 'utf8'))![1]) / 1024;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    const port = await freePort();
    proc = spawnCli(['serve', '--role', 'ingress'], {
      DATABASE_URL: database.url,
      PORT: String(port),
      POSTROOM_WEBHOOK_SECRETS: TEST_SECRET,
      POSTROOM_MAX_BODY_BYTES: String(LIMIT),
      POSTROOM_REQUEST_TIMEOUT_MS: '2000',
    });
    base = `http://127.0.0.1:${port}`;
    hook = `${base}/webhooks`;
    await waitForHttp(`${base}/readyz`, proc);
  });
  afterAll(async () => {
    proc?.child.kill('SIGTERM');
    await proc?.exited;
    await database?.drop();
  });

  async function send(body: Buffer | string, headers: Record<string, string>): Promise<number> {
    const res = await request(hook, { method: 'POST', body, headers });
    await res.body.dump();
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    return res.statusCode;
  }

  const now = (): number => Math.floor(Date.now() / 1000);
  const validBody = (): string => JSON.stringify(makeEvent());

  it('refuses random and truncated signature headers', async () => {
    const warm = rss();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.string({ unit: fc.constantFrom(...'tv1=,0123456789abcdef '.split('')), maxLength: 120 }),
          fc.nat({ max: 90 }).map((n) => sign({ secret: TEST_SECRET, body: 'x' }).slice(0, n)),
        ),
        async (header) => {
          const status = await send(validBody(), {
            'content-type': 'application/json',
            'x-service-signature': header.replace(/[\r\n\0]/g, ''),
          });
          expect(status).toBe(401);
        },
      ),
      { numRuns: 400 },
    );
    expect(rss() - warm).toBeLessThan(150);
  });

  it('refuses valid signatures over altered bodies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.integer({ min: 1, max: 255 }), fc.constantFrom('flip', 'append', 'truncate'), async (at, x, how) => {
        const body = Buffer.from(validBody());
        const header = sign({ secret: TEST_SECRET, body });
        let altered: Buffer;
        if (how === 'flip') {
          altered = Buffer.from(body);
          const i = at % altered.length;
          altered[i] = altered[i]! ^ x;
        } else if (how === 'append') altered = Buffer.concat([body, Buffer.from([x])]);
        else altered = body.subarray(0, at % body.length);
        expect(await send(altered, { 'content-type': 'application/json', 'x-service-signature': header })).toBe(401);
      }),
      { numRuns: 400 },
    );
  });

  it('stores anything correctly signed (hostile JSON, __proto__, invalid UTF-8, odd content types) without a 5xx, and refuses it unsigned', async () => {
    const hostile = fc.oneof(
      fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)),
      fc.constantFrom(
        '{"__proto__":{"polluted":1},"event_id":"evt_proto","type":"t","at":"2026-11-18T10:15:00Z","data":{}}',
        '{"constructor":{"prototype":{"x":1}},"event_id":"evt_ctor","type":"t","at":"2026-11-18T10:15:00Z","data":{"__proto__":null}}',
      ),
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
      fc.nat({ max: 200 }).map((d) => '['.repeat(d) + ']'.repeat(d)),
    );
    await fc.assert(
      fc.asyncProperty(
        hostile,
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''),
        async (text, type) => {
          const body = Buffer.from(text, 'latin1');
          const headers: Record<string, string> = type ? { 'content-type': type } : {};
          expect(await send(body, headers)).toBe(401);
          const status = await send(body, { ...headers, 'x-service-signature': sign({ secret: TEST_SECRET, body }) });
          expect(status).toBe(200);
        },
      ),
      { numRuns: 400 },
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  /**
   * Sends a request over a plain socket and returns what came back. The body
   * stops right past the limit (a chunked body without its terminator), so the
   * server has read every byte sent when it answers and closes: no write races
   * the close, and the answer is never lost to a reset, as it can be when a
   * client keeps writing into a connection the server has finished with.
   */
  async function rawExchange(head: string, chunks: Buffer[]): Promise<string> {
    const u = new URL(base);
    const socket = net.connect(Number(u.port), u.hostname);
    let response = '';
    socket.on('data', (d) => (response += d));
    socket.on('error', () => undefined);
    const closed = new Promise((r) => socket.once('close', r));
    await new Promise((r) => socket.once('connect', r));
    const write = (data: string | Buffer) => new Promise<void>((r) => socket.write(data, () => r()));
    await write(head);
    for (const chunk of chunks) {
      if (response !== '' || socket.destroyed) break;
      await write(chunk);
    }
    await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
    socket.destroy();
    return response;
  }

  it('answers 413 to oversized bodies, with or without a Content-Length', async () => {
    const big = Buffer.alloc(LIMIT + 1, 'a');
    const header = sign({ secret: TEST_SECRET, body: big });
    const declared = await rawExchange(
      `POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\nX-Service-Signature: ${header}\r\n\r\n`,
      [],
    );
    expect(declared).toMatch(/^HTTP\/1\.1 413 /);
    expect(declared).toContain('payload_too_large');
    const quarter = LIMIT / 4;
    const chunk = (n: number) => Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), Buffer.alloc(n, 'b'), Buffer.from('\r\n')]);
    const chunked = await rawExchange(
      `POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Service-Signature: ${header}\r\n\r\n`,
      [chunk(quarter), chunk(quarter), chunk(quarter), chunk(quarter), chunk(1)],
    );
    expect(chunked).toMatch(/^HTTP\/1\.1 413 /);
    expect(chunked).toContain('payload_too_large');
    statuses.set(413, (statuses.get(413) ?? 0) + 2);
  });

  it('keeps a deeply nested body at the size limit as quarantined', async () => {
    const depth = LIMIT / 2 - 10;
    const body = Buffer.from('['.repeat(depth) + ']'.repeat(depth));
    expect(await send(body, { 'content-type': 'application/json', 'x-service-signature': sign({ secret: TEST_SECRET, body }) })).toBe(200);
  });

  it('refuses huge header counts and lengths without a 5xx', async () => {
    const many: Record<string, string> = { 'x-service-signature': sign({ secret: TEST_SECRET, body: 'x' }) };
    for (let i = 0; i < 2000; i++) many[`x-h-${i}`] = 'v';
    const a = await send('x', many).catch(() => 0);
    expect([0, 400, 401, 408, 431]).toContain(a);
    const long = await send('x', { 'x-service-signature': `t=${now()},v1=${'a'.repeat(100_000)}` }).catch(() => 0);
    expect([0, 400, 401, 408, 431]).toContain(long);
  });

  it('cuts a slow-drip body at the server-side request time-out, and keeps serving meanwhile', async () => {
    const u = new URL(base);
    const socket = net.connect(Number(u.port), u.hostname);
    let closed = false;
    let response = '';
    socket.on('data', (d) => (response += d));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Service-Signature: t=${now()},v1=${'0'.repeat(64)}\r\n\r\n{`,
    );
    const drip = setInterval(() => socket.write(' '), 200);
    const e = makeEvent();
    expect((await postEvent(hook, e, { secret: TEST_SECRET })).body.status).toBe('accepted');
    for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setTimeout(r, 100));
    clearInterval(drip);
    socket.destroy();
    expect(closed).toBe(true);
    expect(response === '' || /^HTTP\/1\.1 408/.test(response)).toBe(true);
  });

  it('stops a replay with a fresh timestamp at the stored event_id', async () => {
    const e = makeEvent();
    const body = JSON.stringify(e);
    expect((await postEvent(hook, e, { secret: TEST_SECRET, body, timestamp: now() - 200 })).body.status).toBe('accepted');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -300, max: 300 }), async (skew) => {
        const r = await postEvent(hook, e, { secret: TEST_SECRET, body, timestamp: now() + skew });
        expect(r.status).toBe(200);
        expect(r.body.status).toBe('duplicate');
      }),
      { numRuns: 50 },
    );
  });

  it('never answered a 5xx, stayed within bounded memory, and still accepts a valid event', async () => {
    expect([...statuses.keys()].filter((s) => s >= 500)).toEqual([]);
    expect(rss()).toBeLessThan(400);
    const e = makeEvent();
    expect(await postEvent(hook, e, { secret: TEST_SECRET })).toMatchObject({ status: 200, body: { status: 'accepted' } });
  });
});
