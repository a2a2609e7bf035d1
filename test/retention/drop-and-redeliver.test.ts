import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom } from '../../src/app/postroom.js';
import type { RunningServer } from '../../src/app/server.js';
import { restoreArchive } from '../../src/inbox/archive.js';
import { getInboxEvent } from '../../src/inbox/read-queries.js';
import { runRetention } from '../../src/inbox/retention.js';
import { silentLogger } from '../../src/logging/logger.js';
import type { Queryable } from '../../src/db/types.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { startReceiver, TEST_SECRET } from '../support/receiver.js';

const DAY_MS = 86_400_000;

/** Moves an event's row (and its ledger entry) to a day `daysAgo` before today, creating that day's partition. */
async function ageEvent(q: Queryable, eventId: string, daysAgo: number): Promise<string> {
  const at = new Date(Date.now() - daysAgo * DAY_MS);
  const day = at.toISOString().slice(0, 10);
  await q.query('SELECT inbox_partition_create($1::date)', [day]);
  await q.query('UPDATE inbox SET received_at = $2 WHERE event_id = $1', [eventId, at]);
  await q.query('UPDATE inbox_ids SET received_at = $2 WHERE event_id = $1', [eventId, at]);
  return `inbox_p${day.replaceAll('-', '')}`;
}

async function tableExists(q: Queryable, name: string): Promise<boolean> {
  const res = await q.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [name]);
  return res.rows[0]!.present;
}

describe.each(await availableStoreKinds())('retention drops whole days, and the ledger still de-duplicates, on %s', (kind) => {
  let store: TestStore;
  let server: RunningServer;
  let hook: string;
  let archiveDir: string;

  beforeAll(async () => {
    store = await openTestStore(kind);
    server = await startReceiver({ db: store.db });
    hook = `${server.url}/webhooks`;
    archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-archive-'));
  });
  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
    fs.rmSync(archiveDir, { recursive: true, force: true });
  });

  it('answers duplicate for a redelivery whose partition was dropped, and never runs its handler twice', async () => {
    const event = makeEvent({ data: { correspondence_id: 'cor_ret', participant_id: 'par_1', act: 'approved', ref: 'r' } });
    const body = JSON.stringify(event);
    expect(await postEvent(hook, event, { secret: TEST_SECRET, body })).toMatchObject({ status: 200, body: { status: 'accepted' } });
    const handled: string[] = [];
    const postroom = createPostroom({ db: store.db, logger: silentLogger() });
    postroom.on('participant.acted', (e) => {
      handled.push(e.event_id);
    });
    await postroom.drain();
    expect(handled).toEqual([event.event_id]);

    const partition = await ageEvent(store.db, event.event_id, 120);
    const report = await runRetention({ db: store.db, logger: silentLogger(), keepDays: 90, archiveDir });
    expect(report.dropped.map((d) => d.partition)).toEqual([partition]);
    expect(await tableExists(store.db, partition)).toBe(false);
    expect(await getInboxEvent(store.db, event.event_id)).toBeUndefined();

    // The service redelivers the same signed bytes: the ledger answers duplicate, and nothing is queued.
    expect(await postEvent(hook, event, { secret: TEST_SECRET, body })).toMatchObject({ status: 200, body: { status: 'duplicate' } });
    await postroom.drain();
    expect(handled).toEqual([event.event_id]);
    expect(await getInboxEvent(store.db, event.event_id)).toBeUndefined();

    // The archive puts it back as it was, processed: nothing runs again, and a second restore adds nothing.
    const file = path.join(archiveDir, `${partition}.ndjson.gz`);
    expect(await restoreArchive(store.db, file)).toMatchObject({ rows: 1, restored: 1, present: 0 });
    expect(await restoreArchive(store.db, file)).toMatchObject({ rows: 1, restored: 0, present: 1 });
    const back = await getInboxEvent(store.db, event.event_id);
    expect(back).toMatchObject({ event_id: event.event_id, status: 'processed' });
    const raw = await store.db.query<{ raw_body: Uint8Array }>('SELECT raw_body FROM inbox WHERE event_id = $1', [event.event_id]);
    expect(Buffer.from(raw.rows[0]!.raw_body).toString('utf8')).toBe(body);
    await postroom.drain();
    expect(handled).toEqual([event.event_id]);
  });

  it('keeps a partition that holds an event needing attention, and says why', async () => {
    const event = makeEvent();
    expect(await postEvent(hook, event, { secret: TEST_SECRET })).toMatchObject({ status: 200, body: { status: 'accepted' } });
    await store.db.query(`UPDATE inbox SET status = 'dead', last_error = 'x' WHERE event_id = $1`, [event.event_id]);
    const partition = await ageEvent(store.db, event.event_id, 200);

    const dry = await runRetention({ db: store.db, logger: silentLogger(), keepDays: 90, dryRun: true });
    expect(dry.kept).toContainEqual(expect.objectContaining({ partition, needing_work: { dead: 1 } }));
    const report = await runRetention({ db: store.db, logger: silentLogger(), keepDays: 90 });
    expect(report.dropped.map((d) => d.partition)).not.toContain(partition);
    expect(report.kept).toContainEqual(expect.objectContaining({ partition, reason: expect.stringContaining('1 dead') }));
    expect(await tableExists(store.db, partition)).toBe(true);
    expect(await getInboxEvent(store.db, event.event_id)).toMatchObject({ status: 'dead' });
  });

  it('keeps a partition whose archive could not be written', async () => {
    const event = makeEvent();
    expect(await postEvent(hook, event, { secret: TEST_SECRET })).toMatchObject({ status: 200 });
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now() WHERE event_id = $1`, [event.event_id]);
    const partition = await ageEvent(store.db, event.event_id, 300);
    // A file where the archive folder should be: every write into it fails.
    const blocked = path.join(archiveDir, 'not-a-folder');
    fs.writeFileSync(blocked, '');
    const report = await runRetention({ db: store.db, logger: silentLogger(), keepDays: 90, archiveDir: blocked });
    expect(report.kept).toEqual(
      expect.arrayContaining([expect.objectContaining({ partition, reason: expect.stringContaining('archive failed') })]),
    );
    expect(await tableExists(store.db, partition)).toBe(true);
  });
});
