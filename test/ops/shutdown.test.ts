import { afterAll, describe, expect, it } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import { silentLogger } from '../../src/logging/logger.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { freePort, spawnCli, waitForHttp } from '../support/process.js';
import { TEST_SECRET } from '../support/receiver.js';

const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const d of databases) await d.drop();
});

describe.skipIf(!(await adminUrl()))('SIGTERM during load (a real postroom process on Postgres)', () => {
  it('loses no acknowledged event, acknowledges none that is not stored, and exits within its deadline', async () => {
    const database = await createPostgresDatabase();
    databases.push(database);
    const port = await freePort();
    const proc = spawnCli(['serve', '--role', 'ingress'], {
      DATABASE_URL: database.url,
      PORT: String(port),
      POSTROOM_WEBHOOK_SECRETS: TEST_SECRET,
      POSTROOM_SHUTDOWN_TIMEOUT_MS: '5000',
    });
    const base = `http://127.0.0.1:${port}`;
    await waitForHttp(`${base}/readyz`, proc);

    const acked: string[] = [];
    let refused = 0;
    let networkErrors = 0;
    let stop = false;
    let termSentAt = 0;
    const loops = Array.from({ length: 32 }, async () => {
      while (!stop) {
        const e = makeEvent();
        try {
          const r = await postEvent(`${base}/webhooks`, e, { secret: TEST_SECRET });
          if (r.status === 200) acked.push(e.event_id);
          else refused++;
        } catch {
          networkErrors++;
          if (termSentAt) await new Promise((r) => setTimeout(r, 20));
        }
      }
    });
    await new Promise((r) => setTimeout(r, 1000));
    const ackedBeforeTerm = acked.length;
    termSentAt = Date.now();
    proc.child.kill('SIGTERM');
    const exit = await proc.exited;
    const tookMs = Date.now() - termSentAt;
    stop = true;
    await Promise.all(loops);

    expect(exit.code, proc.output()).toBe(0);
    expect(tookMs).toBeLessThan(5000 + 3000);
    expect(ackedBeforeTerm).toBeGreaterThan(0);
    // The load kept coming through the shutdown: some of it met a closed door rather than a 2xx.
    expect(refused + networkErrors).toBeGreaterThan(0);

    const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
    try {
      const stored = await db.query<{ event_id: string }>('SELECT event_id FROM inbox WHERE event_id = ANY($1::text[])', [acked]);
      expect(stored.rows.length).toBe(acked.length);
    } finally {
      await db.close();
    }
  });
});
