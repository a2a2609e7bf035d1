import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { startReceiver } from '../support/receiver.js';

const kind = (await availableStoreKinds())[0]!;

function listenOn(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/**
 * The webhook port is bound before the metrics port. A start that then fails must give the webhook port back:
 * a supervisor restarting the process would otherwise find it taken by the failed start's server.
 */
describe(`a start that fails after binding the webhook port (${kind})`, () => {
  let store: TestStore;
  let taken: net.Server;
  let metricsPort: number;

  beforeAll(async () => {
    store = await openTestStore(kind);
    metricsPort = await freePort();
    taken = await listenOn(metricsPort);
  });
  afterAll(async () => {
    await new Promise((resolve) => taken?.close(resolve));
    await store?.cleanup();
  });

  it('fails on the metrics port that is in use and leaves the webhook port free', async () => {
    const port = await freePort();
    await expect(
      startReceiver({ db: store.db, env: { PORT: String(port), HOST: '127.0.0.1', POSTROOM_METRICS_PORT: String(metricsPort) } }),
    ).rejects.toThrow(String(metricsPort));
    const again = await listenOn(port);
    await new Promise((resolve) => again.close(resolve));
  });
});
