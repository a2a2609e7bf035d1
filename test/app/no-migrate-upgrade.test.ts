import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { migrationsBefore } from '../support/migrations.js';
import { freePort, spawnCli, waitForHttp } from '../support/process.js';

const pg = await adminUrl();
const SECRET = 'whsec_no_migrate_upgrade_0123456789';

/**
 * A rolling upgrade as deploy/k8s runs it: the new build's pods start with --no-migrate,
 * and the migration Job may finish after them. Until it does, the worker must not run: its
 * statements name what the pending migrations add, so every attempt would fail and, past the
 * attempts, the events would go dead. Ingress keeps taking events meanwhile (the previous
 * schema holds them), /readyz says what is pending, and once `postroom migrate` has run the
 * worker starts by itself and processes what waited.
 */
describe.skipIf(!pg)('serve --no-migrate on a store one release behind', () => {
  let store: TestStore;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    store = await openTestStore('postgres', { migrate: false });
    // The latest migration is what this build adds over the previous release.
    await migrate(store.db, { dir: migrationsBefore(11, cleanups) });
  });
  afterAll(async () => {
    for (const c of cleanups) await c();
    await store?.cleanup();
  });

  const statusOf = async (eventId: string): Promise<{ status: string; last_error: string | null } | undefined> =>
    (
      await store.db.query<{ status: string; last_error: string | null }>('SELECT status, last_error FROM inbox WHERE event_id = $1', [
        eventId,
      ])
    ).rows[0];

  it('takes events, holds the worker until the migrations are applied, then processes them', async () => {
    const port = await freePort();
    const proc = spawnCli(['serve', '--no-migrate'], {
      DATABASE_URL: store.url!,
      PORT: String(port),
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      POSTROOM_WEBHOOK_SECRETS: SECRET,
      POSTROOM_WORKER_POLL_MS: '50',
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await waitForHttp(`${base}/healthz`, proc);

      // /healthz answers as soon as the server listens; the components' check joins /readyz once the store is
      // open and the schema gate has looked (on a loaded machine, after the first /readyz: seen once in CI).
      type Report = { checks: Record<string, { ok: boolean; detail?: string }> };
      let waiting = await fetch(`${base}/readyz`);
      let report = (await waiting.json()) as Report;
      for (const until = Date.now() + 10_000; !report.checks.components && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 100));
        waiting = await fetch(`${base}/readyz`);
        report = (await waiting.json()) as Report;
      }
      expect(waiting.status).toBe(503);
      expect(report.checks.components).toMatchObject({ ok: false });
      expect(report.checks.components?.detail).toContain('011_participant_act_reread');
      expect(report.checks.components?.detail).toContain('postroom migrate');

      const event = makeEvent({ type: 'participant.acted' });
      const res = await postEvent(`${base}/webhooks`, event, { secret: SECRET });
      expect(res.status).toBeLessThan(300);
      // Long enough for a running worker to have claimed it many times over (it polls every 50 ms).
      await new Promise((r) => setTimeout(r, 1500));
      expect(await statusOf(event.event_id)).toEqual({ status: 'received', last_error: null });

      await migrate(store.db);
      const until = Date.now() + 15_000;
      while ((await statusOf(event.event_id))?.status !== 'processed' && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      expect(await statusOf(event.event_id)).toMatchObject({ status: 'processed' });
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      expect(proc.output()).toContain('run `postroom migrate`');
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    expect(proc.output()).not.toMatch(/could not start/);
  }, 60_000);
});
