import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { createLogger } from '../../src/logging/logger.js';
import { sign } from '../../src/signature/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
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
    for (const needle of ['svc_live_abcdef', 'deadbeef', 'svc_sandbox_key123', 'whsec_zzz', 'whsec_a', 'fwd"', 'v1=aa']) expect(text).not.toContain(needle);
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
      await postEvent(hook, e1, { secret: TEST_SECRET, headers: { 'x-service-signature': track(JSON.stringify(e1)), 'x-service-event-id': 'evt_forged' } });
      await postEvent(hook, null, { secret: TEST_SECRET, body: '{"event_id":"evt_q"}', headers: { 'x-service-signature': track('{"event_id":"evt_q"}') } });
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
