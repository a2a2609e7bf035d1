import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import { loadHandlerModule } from '../../src/app/handler-module.js';
import { adminUrl, createPostgresDatabase, openDefaultTestStore, type TestDatabase, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { freePort, ROOT, spawnCli, waitForHttp, type CliProcess } from '../support/process.js';
import { createPgDb } from '../../src/db/pg.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createEffectsTable, envelope, insertEnvelopes, waitFor } from './support.js';

const FIXTURES = path.join(ROOT, 'test/worker/fixtures');
const WEBHOOK_SECRET = 'whsec_serve_test_0123456789abcdef';
const FORWARD_SECRET = 'fwd_serve_test_0123456789';

describe('handler modules (--handlers)', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openDefaultTestStore();
    await createEffectsTable(store.db);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('loads a default-exported handler map, "*" included', async () => {
    const postroom = createPostroom({ db: store.db, worker: { listen: false } });
    await loadHandlerModule('test/worker/fixtures/handler-map.js', postroom, ROOT);
    const e = envelope('correspondence.sealed', { correspondence_id: 'cor_map' });
    await insertEnvelopes(store.db, [e, envelope('something.new', {})]);
    expect((await postroom.drain()).by_status).toEqual({ processed: 2 });
    expect((await store.db.query('SELECT correspondence_id FROM effects WHERE event_id = $1', [e.event_id])).rows).toEqual([
      { correspondence_id: 'cor_map' },
    ]);
  });

  it('explains what is wrong with a module it cannot use', async () => {
    const postroom = createPostroom({ db: store.db });
    await expect(loadHandlerModule('nope/handlers.js', postroom, ROOT)).rejects.toMatchObject({
      code: 'config_invalid',
      message: expect.stringMatching(/--handlers: no file at .*nope\/handlers\.js/),
    });
    await expect(loadHandlerModule('test/worker/fixtures/handlers-typo.js', postroom, ROOT)).rejects.toMatchObject({
      message: expect.stringMatching(/"participant\.acts" is not an event type/),
    });
    await expect(loadHandlerModule('test/worker/fixtures/handlers-no-default.js', postroom, ROOT)).rejects.toMatchObject({
      message: expect.stringMatching(/must have a default export/),
    });
    await expect(loadHandlerModule('test/worker/fixtures/handlers-throws.js', postroom, ROOT)).rejects.toMatchObject({
      code: 'handlers_module_failed',
      message: expect.stringMatching(/could not load .*handlers-throws\.js: cannot reach the secret store/),
    });
  });
});

const pg = await adminUrl();

describe.runIf(pg)('postroom serve runs the worker', () => {
  let database: TestDatabase;
  let proc: CliProcess | undefined;
  let core: http.Server | undefined;

  beforeAll(async () => {
    database = await createPostgresDatabase();
  });
  afterEach(async () => {
    if (proc && proc.child.exitCode === null) {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    proc = undefined;
    if (core) await new Promise<void>((r) => core!.close(() => r()));
    core = undefined;
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('with --handlers and the forwarder: a signed webhook becomes a handler effect and a signed forward', async () => {
    const forwarded: Array<{ id: unknown; signature: unknown }> = [];
    core = http.createServer((req, res) => {
      req.resume();
      forwarded.push({ id: req.headers['x-service-event-id'], signature: req.headers['x-service-signature'] });
      res.writeHead(200).end();
    });
    await new Promise<void>((r) => core!.listen(0, '127.0.0.1', () => r()));
    const corePort = (core.address() as AddressInfo).port;

    const db = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger() });
    const port = await freePort();
    proc = spawnCli(['serve', '--handlers', path.join(FIXTURES, 'handlers.js'), '--port', String(port)], {
      DATABASE_URL: database.url,
      POSTROOM_WEBHOOK_SECRETS: WEBHOOK_SECRET,
      POSTROOM_FORWARD_URL: `http://127.0.0.1:${corePort}/events`,
      POSTROOM_FORWARD_SECRET: FORWARD_SECRET,
      POSTROOM_WORKER_POLL_MS: '100',
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc);
      await createEffectsTable(db);
      const events = [makeEvent(), makeEvent({ type: 'campaign.archived', data: { campaign_id: 'c1' } })];
      for (const e of events)
        expect((await postEvent(`http://127.0.0.1:${port}/webhooks`, e, { secret: WEBHOOK_SECRET })).status).toBe(200);

      await waitFor(
        async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM effects')).rows[0]!.n === 2 && forwarded.length >= 2,
        'effects written and events forwarded',
      );
      expect((await db.query('SELECT event_id FROM effects ORDER BY event_id')).rows).toEqual(
        events.map((e) => ({ event_id: e.event_id })).sort((a, b) => (a.event_id < b.event_id ? -1 : 1)),
      );
      expect(forwarded.map((f) => f.id).sort()).toEqual(events.map((e) => e.event_id).sort());
      expect(forwarded.every((f) => typeof f.signature === 'string' && /^t=\d+,v1=[0-9a-f]{64}$/.test(f.signature))).toBe(true);
      const statuses = await db.query<{ status: string }>('SELECT DISTINCT status FROM inbox');
      expect(statuses.rows).toEqual([{ status: 'processed' }]);
    } finally {
      await db.close();
    }
  });

  it('refuses to start forwarding unsigned, naming the missing setting', async () => {
    const port = await freePort();
    proc = spawnCli(['serve', '--port', String(port)], {
      DATABASE_URL: database.url,
      POSTROOM_WEBHOOK_SECRETS: WEBHOOK_SECRET,
      POSTROOM_FORWARD_URL: 'http://127.0.0.1:9/events',
    });
    const { code } = await proc.exited;
    expect(code).not.toBe(0);
    expect(proc.output()).toMatch(/POSTROOM_FORWARD_SECRET/);
  });
});
