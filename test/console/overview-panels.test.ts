import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishProbe, startProbe } from '../../src/probe/probe-queries.js';
import { advanceCompleteness } from '../../src/reconciler/completeness-queries.js';
import type { TestStore } from '../support/db.js';
import { consoleClient } from './client.js';
import { startConsoleServer, type ConsoleServer } from './server.js';
import { parsePage } from './html.js';

const VIEWER = 'viewer-token-0123456789abcdefghij';

/** The overview shows each endpoint's completeness watermark and its last probe once there are any. */
describe('the console overview: watermark and probe per endpoint', () => {
  let served: ConsoleServer;
  let store: TestStore;
  let admin: string;

  beforeAll(async () => {
    served = await startConsoleServer(`viewer:vera:${VIEWER}\n`);
    ({ store, admin } = served);
  });

  afterAll(async () => {
    await served?.close();
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
