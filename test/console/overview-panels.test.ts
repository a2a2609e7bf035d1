import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { finishProbe, startProbe } from '../../src/probe/probe-queries.js';
import { advanceCompleteness } from '../../src/reconciler/completeness-queries.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { consoleClient } from './client.js';
import { parsePage } from './html.js';

const VIEWER = 'viewer-token-0123456789abcdefghij';

/** The overview shows each endpoint's completeness watermark and its last probe once there are any. */
describe('the console overview: watermark and probe per endpoint', () => {
  let store: TestStore;
  let server: RunningServer;
  let admin: string;
  let dir: string;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-console-'));
    const tokensFile = path.join(dir, 'tokens');
    fs.writeFileSync(tokensFile, `viewer:vera:${VIEWER}\n`);
    const metricsPort = await freePort();
    server = await startServer({
      config: loadConfig({
        NODE_ENV: 'test',
        PORT: '0',
        POSTROOM_WEBHOOK_SECRETS: 'whsec_console_test_0123456789abcdef',
        POSTROOM_METRICS_PORT: String(metricsPort),
        POSTROOM_CONSOLE_TOKENS_FILE: tokensFile,
      }),
      logger: silentLogger(),
      db: store.db,
      role: 'ingress',
    });
    admin = `http://127.0.0.1:${metricsPort}`;
  });

  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const overviewTexts = async (): Promise<string> => {
    const client = consoleClient(admin);
    await client.login(VIEWER);
    const res = await client.get('/console');
    expect(res.status).toBe(200);
    return parsePage(await res.text()).texts.join(' ');
  };

  it('leaves both panels out while nothing is proved or probed, and shows them after', async () => {
    const before = await overviewTexts();
    expect(before).not.toContain('Complete through, per endpoint');
    expect(before).not.toContain('Probe per endpoint');

    await advanceCompleteness(store.db, {
      plane: 'sandbox',
      endpointId: 'we_panel',
      completeThrough: new Date('2026-12-06T02:41:00Z'),
      runId: 7,
    });
    const started = await startProbe(store.db, { plane: 'sandbox', endpointId: 'we_panel', minIntervalMs: 0, staleMs: 60_000 });
    if (!('probeId' in started)) throw new Error('probe not started');
    await finishProbe(store.db, {
      probeId: started.probeId,
      outcome: 'signature_refused',
      roundTripMs: null,
      detail: 'postroom refused the signature',
      eventId: 'evt_probe_1',
    });

    const after = await overviewTexts();
    expect(after).toContain('Complete through, per endpoint');
    expect(after).toContain('we_panel');
    expect(after).toMatch(/2026-12-06[ T]02:41/);
    expect(after).toContain('Probe per endpoint');
    expect(after).toContain('signature_refused');
  });
});
