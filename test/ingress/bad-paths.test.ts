import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import { systemClock } from '../../src/clock.js';
import { createInboxWriter, type InboxWriter } from '../../src/inbox/group-commit.js';
import { createIngressCore } from '../../src/ingress/accept.js';
import { createIngressRouter } from '../../src/ingress/router.js';
import { staticSecrets } from '../../src/secrets/secret-provider.js';
import { createLogger } from '../../src/logging/logger.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { captureLog } from '../support/log-capture.js';
import { errorCode, rawRequest } from '../support/raw-http.js';
import { BAD_TARGETS, METHODS, startHostApp } from '../support/host-app.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

describe('malformed paths get the same client error from the standalone server and a mounted router', () => {
  let store: TestStore;
  let standalone: RunningServer;
  let writer: InboxWriter;
  let host: { url: string; close(): Promise<void> };
  const standaloneLog = captureLog();
  const hostLog = captureLog();

  beforeAll(async () => {
    store = await openDefaultTestStore();
    standalone = await startReceiver({ db: store.db, logger: createLogger({ level: 'trace', destination: standaloneLog.stream }) });
    const logger = createLogger({ level: 'trace', destination: hostLog.stream });
    writer = createInboxWriter({ db: store.db, logger, maxBatch: 16 });
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

  it.each(BAD_TARGETS.flatMap((t) => METHODS.map((m) => [m, t] as const)))('%s %s', async (method, target) => {
    const since = [standaloneLog.mark(), hostLog.mark()];
    const a = await rawRequest(standalone.url, method, target, { body: method === 'GET' || method === 'HEAD' ? '' : '{}' });
    const b = await rawRequest(host.url, method, target, { body: method === 'GET' || method === 'HEAD' ? '' : '{}' });
    expect(a.status).toBeGreaterThanOrEqual(400);
    expect(a.status).toBeLessThan(500);
    expect({ status: b.status, code: errorCode(b) }).toEqual({ status: a.status, code: errorCode(a) });
    for (const logged of since.map((s) => s())) {
      const levels = logged
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { level: number }).level);
      // debug is 20: nothing an unsigned sender can make us write at info or above
      expect(levels.filter((l) => l > 20)).toEqual([]);
    }
  });
});
