import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { createPgDb } from '../../src/db/pg.js';
import { PostroomError } from '../../src/errors.js';
import { createHandlerRegistry } from '../../src/events/registry.js';
import { createLogger } from '../../src/logging/logger.js';
import { createWorker } from '../../src/worker/worker.js';
import { sign } from '../../src/signature/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { freePort } from '../support/process.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

function capture(): { stream: Writable; text(): string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('logs never carry secrets, keys or signature headers', () => {
  it('redacts credentials wherever they sit in a logged object', () => {
    const out = capture();
    const logger = createLogger({ level: 'debug', destination: out.stream });
    logger.info({ headers: { authorization: 'Bearer svc_live_abcdef', 'x-service-signature': 't=1,v1=deadbeef' } }, 'request');
    logger.info({ req: { headers: { authorization: 'Bearer svc_live_abcdef' } } }, 'nested');
    logger.info({ config: { apiKey: 'svc_sandbox_key123', secret: 'whsec_zzz', secrets: ['whsec_a'], forwardSecret: 'fwd' } }, 'config');
    logger.info({ apiKey: 'svc_sandbox_key123', secret: 'whsec_zzz', signatureHeader: 't=1,v1=aa' }, 'top');
    const text = out.text();
    for (const needle of ['svc_live_abcdef', 'deadbeef', 'svc_sandbox_key123', 'whsec_zzz', 'whsec_a', 'fwd"', 'v1=aa'])
      expect(text).not.toContain(needle);
    expect(text).toContain('[redacted]');
  });

  it('removes configured secret values from every line, however escaped, wherever they sit', () => {
    const out = capture();
    const key = 'svc_live_Qm9yZWFsbHlzZWNyZXQ';
    const logger = createLogger({ level: 'debug', destination: out.stream, secretValues: [key, 'whsec_configured_1234'] });
    logger.error({ err: { message: `gateway said: bad key ${key.replace(/_/g, '\\u005f')}` } }, 'call failed');
    logger.warn({ body: { nested: [`\\u0073vc_live_Qm9yZWFsbHlzZWNyZXQ`] } }, `echo ${key}`);
    logger.info({ note: 'whsec_configured_1234'.replace('_', '%5F') }, 'x');
    const decoded = out
      .text()
      .replace(/\\u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    expect(decoded).not.toContain(key);
    expect(decoded).not.toContain('whsec_configured_1234');
    expect(out.text().match(/\[redacted\]/g)).toHaveLength(4);
  });

  describe('through the receiver', () => {
    let store: TestStore;
    let server: RunningServer;
    const out = capture();

    beforeAll(async () => {
      store = await openDefaultTestStore();
      server = await startReceiver({ db: store.db, logger: createLogger({ level: 'trace', destination: out.stream }) });
    });
    afterAll(async () => {
      await server?.close();
      await store?.cleanup();
    });

    it('logs suspicious and failed deliveries without the secret or signature', async () => {
      const hook = `${server.url}/webhooks`;
      const signatures: string[] = [];
      const track = (body: string): string => {
        const s = sign({ secret: TEST_SECRET, body });
        signatures.push(s.split('v1=')[1]!);
        return s;
      };
      const e1 = makeEvent();
      await postEvent(hook, e1, {
        secret: TEST_SECRET,
        headers: { 'x-service-signature': track(JSON.stringify(e1)), 'x-service-event-id': 'evt_forged' },
      });
      await postEvent(hook, null, {
        secret: TEST_SECRET,
        body: '{"event_id":"evt_q"}',
        headers: { 'x-service-signature': track('{"event_id":"evt_q"}') },
      });
      await postEvent(hook, makeEvent(), { secret: 'whsec_attacker_guess' });
      const text = out.text();
      expect(text).toContain('suspicious delivery');
      expect(text).toContain('quarantined');
      expect(text).not.toContain(TEST_SECRET);
      expect(text).not.toContain('whsec_attacker_guess');
      for (const s of signatures) expect(text).not.toContain(s);
    });
  });
});

describe('errors are logged as objects: type, stack and cause survive, secrets do not', () => {
  type LogLine = { msg: string; err: Record<string, string> };
  const lines = (text: string): LogLine[] =>
    text
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogLine);

  it("keeps an error's type, code, stack and cause, and scrubs credentials from its message and stack", () => {
    const out = capture();
    const logger = createLogger({ level: 'info', destination: out.stream });
    const cause = new TypeError('connect ECONNREFUSED postgres://postroom:hunter2pw@db.internal/postroom');
    const err = new PostroomError('store_unavailable', 'inbox write failed with Bearer svc_live_leakedkey and whsec_leakedsecret', {
      cause,
    });
    logger.child({ component: 'worker' }).error({ err }, 'failed');
    logger.warn({ err: 'a plain string whsec_stringsecret' }, 'string');
    const text = out.text();
    for (const needle of ['hunter2pw', 'svc_live_leakedkey', 'leakedkey', 'whsec_leakedsecret', 'leakedsecret', 'stringsecret'])
      expect(text).not.toContain(needle);
    const [line] = lines(text);
    expect(line!.err.type).toBe('PostroomError');
    expect(line!.err.code).toBe('store_unavailable');
    expect(line!.err.message).toMatch(
      /^inbox write failed with Bearer \[redacted\] and whsec_\[redacted\]: connect ECONNREFUSED postgres:\/\/postroom:\[redacted\]@db.internal/,
    );
    expect(line!.err.stack).toMatch(/\n\s+at /);
    expect(line!.err.stack).toMatch(/caused by: TypeError: connect ECONNREFUSED/);
  });

  it('a real call site (the worker loop on a store that is down) logs the error object', async () => {
    const out = capture();
    const logger = createLogger({ level: 'info', destination: out.stream });
    const port = await freePort();
    const db = createPgDb({ url: `postgres://postroom:hunter2pw@127.0.0.1:${port}/postroom`, poolSize: 1, logger, connectTimeoutMs: 200 });
    const worker = createWorker({ db, registry: createHandlerRegistry(), logger, options: { pollIntervalMs: 50, concurrency: 1 } });
    await worker.start();
    try {
      for (let i = 0; i < 200 && !out.text().includes('worker loop error'); i++) await new Promise((r) => setTimeout(r, 25));
    } finally {
      await worker.stop(1000);
      await db.close();
    }
    const loop = lines(out.text()).find((l) => l.msg === 'worker loop error; retrying after the poll interval');
    expect(loop, out.text()).toBeDefined();
    expect(loop!.err.type).toBe('Error');
    expect(loop!.err.code).toBe('ECONNREFUSED');
    expect(loop!.err.stack).toMatch(/\n\s+at /);
    expect(out.text()).not.toContain('hunter2pw');
  });
});
