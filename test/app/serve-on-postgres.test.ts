import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { freePort, spawnCli, waitForHttp } from '../support/process.js';

const pg = await adminUrl();

/** On Postgres, serve neither speaks of nor writes to the embedded store's folder. */
describe.skipIf(!pg)('postroom serve on Postgres', () => {
  let store: TestStore;
  let dataDir: string;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-serve-pg-'));
  });
  afterAll(async () => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await store?.cleanup();
  });

  it('refuses to start without a signing secret instead of writing a development one to the data folder', async () => {
    const proc = spawnCli(['serve', '--role', 'ingress'], {
      DATABASE_URL: store.url!,
      POSTROOM_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      NODE_ENV: 'development',
    });
    const exit = await proc.exited;
    expect(exit.code).not.toBe(0);
    expect(proc.output()).toContain('POSTROOM_WEBHOOK_SECRETS');
    expect(proc.output()).not.toMatch(/embedded store/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('with a secret, serves and says nothing of the embedded store', async () => {
    const port = await freePort();
    const proc = spawnCli(['serve', '--role', 'ingress'], {
      DATABASE_URL: store.url!,
      POSTROOM_DATA_DIR: dataDir,
      PORT: String(port),
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      POSTROOM_WEBHOOK_SECRETS: 'whsec_serve_on_pg_0123456789',
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    expect(proc.output()).not.toMatch(/embedded store|\.postroom/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });
});
