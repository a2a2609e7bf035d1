import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { runCli } from '../support/cli.js';
import { envelope, toRow } from '../worker/support.js';

describe('POSTROOM_RETENTION', () => {
  it('takes whole days or weeks, 90 days by default, and refuses less than the reconciler needs', () => {
    expect(loadConfig({}).retention).toMatchObject({ keepDays: 90, cron: '7 * * * *', archiveDir: undefined });
    expect(loadConfig({ POSTROOM_RETENTION: '13w' }).retention.keepDays).toBe(91);
    expect(loadConfig({ POSTROOM_RETENTION: '8d' }).retention.keepDays).toBe(8);
    for (const bad of ['7d', '90', '24h', '1.5d', 'forever'])
      expect(() => loadConfig({ POSTROOM_RETENTION: bad })).toThrow(/POSTROOM_RETENTION.*8d/);
  });
});

describe.skipIf(!(await adminUrl()))('postroom retention run and archive restore', () => {
  let store: TestStore;
  let env: Record<string, string>;
  let dir: string;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-archive-cli-'));
    env = { DATABASE_URL: store.url!, POSTROOM_ARCHIVE_DIR: dir };
  });
  afterAll(async () => {
    await store?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lists what it would drop and why it keeps a day, drops it with an archive, and restores only a whole file', async () => {
    const done = envelope('participant.acted', { correspondence_id: 'cor_cli' }, '2026-01-05T10:00:00Z', 'evt_cli_done');
    const dead = envelope('participant.acted', { correspondence_id: 'cor_cli' }, '2026-01-05T10:00:00Z', 'evt_cli_dead');
    await insertInboxBatch(store.db, [toRow(done), toRow(dead)]);
    const old = new Date(Date.now() - 100 * 86_400_000);
    const older = new Date(Date.now() - 101 * 86_400_000);
    for (const [id, at] of [
      ['evt_cli_done', old],
      ['evt_cli_dead', older],
    ] as const) {
      await store.db.query('SELECT inbox_partition_create(($1::timestamptz AT TIME ZONE $2)::date)', [at, 'UTC']);
      await store.db.query('UPDATE inbox SET received_at = $2 WHERE event_id = $1', [id, at]);
      await store.db.query('UPDATE inbox_ids SET received_at = $2 WHERE event_id = $1', [id, at]);
    }
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now() WHERE event_id = 'evt_cli_done'`);
    await store.db.query(`UPDATE inbox SET status = 'dead', last_error = 'x' WHERE event_id = 'evt_cli_dead'`);
    const day = (d: Date): string => `inbox_p${d.toISOString().slice(0, 10).replaceAll('-', '')}`;

    const dry = await runCli(['retention', 'run', '--dry-run', '--json'], env);
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout) as { dry_run: boolean; dropped: Array<{ partition: string }>; kept: Array<{ partition: string }> };
    expect(plan.dry_run).toBe(true);
    expect(plan.dropped.map((d) => d.partition)).toEqual([day(old)]);
    expect(plan.kept.map((k) => k.partition)).toEqual([day(older)]);

    const run = await runCli(['retention', 'run'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/dropped 1, kept 1/);
    expect(run.stdout).toMatch(/1 dead/);
    const file = path.join(dir, `${day(old)}.ndjson.gz`);
    expect(fs.existsSync(`${file}.sha256`)).toBe(true);
    const gone = await runCli(['inbox', 'show', 'evt_cli_done'], env);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/dropped by retention/);

    // A file that does not match its checksum restores nothing.
    const cut = path.join(dir, 'cut.ndjson.gz');
    fs.writeFileSync(cut, fs.readFileSync(file).subarray(0, 20));
    fs.writeFileSync(`${cut}.sha256`, fs.readFileSync(`${file}.sha256`, 'utf8').replace(path.basename(file), 'cut.ndjson.gz'));
    const refused = await runCli(['archive', 'restore', cut], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/does not match its checksum/);

    const restored = await runCli(['archive', 'restore', file, '--json'], env);
    expect(JSON.parse(restored.stdout)).toMatchObject({ rows: 1, restored: 1, present: 0 });
    const row = await store.db.query<{ status: string }>(`SELECT status FROM inbox WHERE event_id = 'evt_cli_done'`);
    expect(row.rows).toEqual([{ status: 'processed' }]);
  });
});
