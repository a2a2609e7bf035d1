import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { replayEvent, replayMatching } from '../../src/worker/replay.js';
import { runCli } from '../support/cli.js';
import { adminUrl, availableStoreKinds, createPastPartitions, openTestStore, type TestStore } from '../support/db.js';
import { countByStatus, createEffectsTable, EFFECT_SQL, envelope, inboxRow, insertEnvelopes, makeDue, toRow } from './support.js';

const kinds = await availableStoreKinds();
const OPTIONS: Partial<WorkerOptions> = { maxAttempts: 3, listen: false, retryBackoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 } };

const acted = (cid: string, act: string) => envelope('participant.acted', { correspondence_id: cid, participant_id: 'p', act, ref: 'r' });

describe.each(kinds)('poison events and replay (%s)', (kind) => {
  let store: TestStore;
  let postroom: Postroom;
  let broken = true;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store.db);
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection, effects');
    broken = true;
    postroom = createPostroom({ db: store.db, worker: OPTIONS });
    postroom.on('participant.acted', async (event, ctx) => {
      if (broken && event.data.act === 'poison') throw new Error('handler bug: cannot handle poison');
      await ctx.tx.query(EFFECT_SQL, [event.event_id, null, ctx.attempt]);
    });
  });
  afterEach(async () => {
    await postroom.stop(1000);
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  async function runToDead(): Promise<void> {
    for (let i = 0; i < OPTIONS.maxAttempts! + 1; i++) {
      await makeDue(store.db);
      await postroom.drain();
    }
  }

  it('goes dead after the maximum attempts, and replay runs it again, once, after the fix', async () => {
    const poison = acted('cor_p', 'poison');
    await insertEnvelopes(store.db, [poison]);
    await runToDead();
    const dead = await inboxRow(store.db, poison.event_id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 3, last_error: 'handler bug: cannot handle poison' });

    broken = false;
    expect(await replayEvent(store.db, poison.event_id)).toEqual({ outcome: 'replayed', from_status: 'dead' });
    const queued = await inboxRow(store.db, poison.event_id);
    expect(queued).toMatchObject({ status: 'received', attempts: 0 });
    expect(queued.last_error).toMatch(/^replayed at .* from dead after 3 attempt\(s\); last error: handler bug/);
    await postroom.drain();
    await postroom.drain();
    expect(await inboxRow(store.db, poison.event_id)).toMatchObject({ status: 'processed', attempts: 1 });
    expect((await store.db.query('SELECT event_id, n FROM effects')).rows).toEqual([{ event_id: poison.event_id, n: 1 }]);
  });

  it('replays many dead events by filter, and re-validates quarantined ones first', async () => {
    const poisons = [acted('cor_1', 'poison'), acted('cor_2', 'poison')];
    const wallet = envelope('wallet.debited', { amount: 5 });
    await insertEnvelopes(store.db, [...poisons, wallet]);
    postroom.on('wallet.debited', () => {
      if (broken) throw new Error('wallet bug');
    });
    await runToDead();
    expect(await countByStatus(store.db)).toEqual({ dead: 3 });

    // A row an older catalogue quarantined although its data is valid today, one still invalid,
    // and one whose body ingress could not parse at the time but can now.
    const nowValid = acted('cor_3', 'read');
    const stillBad = envelope('participant.acted', { correspondence_id: 'cor_4' });
    const unparsed = acted('cor_5', 'read');
    await insertInboxBatch(store.db, [
      { ...toRow(nowValid), status: 'quarantined', lastError: 'old catalogue' },
      { ...toRow(stillBad), status: 'quarantined', lastError: 'missing act' },
      {
        ...toRow(unparsed),
        status: 'quarantined',
        payloadJson: null,
        type: 'unknown',
        occurredAt: null,
        correspondenceId: null,
        lastError: 'parser bug',
      },
    ]);

    expect(await replayMatching(store.db, { status: 'dead', type: 'participant.acted' }, { dryRun: true })).toMatchObject({
      matched: 2,
      replayed: 0,
      dry_run: true,
    });
    expect(await countByStatus(store.db)).toMatchObject({ dead: 3 });
    broken = false;
    const progress: number[] = [];
    expect(
      await replayMatching(store.db, { status: 'dead', type: 'participant.acted' }, { onProgress: (done) => progress.push(done) }),
    ).toMatchObject({ matched: 2, replayed: 2 });
    expect(progress.at(-1)).toBe(2);
    expect((await inboxRow(store.db, wallet.event_id)).status).toBe('dead');

    const q = await replayMatching(store.db, { status: 'quarantined' });
    expect(q).toMatchObject({
      matched: 3,
      replayed: 2,
      still_invalid: 1,
      invalid_examples: [{ event_id: stillBad.event_id, reason: expect.stringMatching(/act/) }],
    });
    expect(await inboxRow(store.db, stillBad.event_id)).toMatchObject({
      status: 'quarantined',
      last_error: expect.stringMatching(/^still invalid on replay/),
    });
    const reparsed = await store.db.query<{ type: string; correspondence_id: string; payload: unknown }>(
      'SELECT type, correspondence_id, payload FROM inbox WHERE event_id = $1',
      [unparsed.event_id],
    );
    expect(reparsed.rows[0]).toEqual({ type: 'participant.acted', correspondence_id: 'cor_5', payload: unparsed });

    await postroom.drain();
    expect(await countByStatus(store.db)).toEqual({ processed: 4, dead: 1, quarantined: 1 });
  });

  it('refuses to replay what is queued, running or pruned', async () => {
    const e = acted('cor_r', 'read');
    await insertEnvelopes(store.db, [e]);
    await expect(replayEvent(store.db, e.event_id)).rejects.toMatchObject({
      code: 'replay_refused',
      message: expect.stringMatching(/already waiting/),
    });
    await expect(replayEvent(store.db, 'evt_nope')).rejects.toMatchObject({ code: 'not_found' });
    await postroom.drain();
    await store.db.query(`UPDATE inbox SET payload = NULL, raw_body = NULL, pruned_at = now() WHERE event_id = $1`, [e.event_id]);
    await expect(replayEvent(store.db, e.event_id)).rejects.toMatchObject({ message: expect.stringMatching(/pruned/) });
  });
});

const pgUrl = await adminUrl();

describe.runIf(pgUrl)('inbox and correspondence CLI (postgres)', () => {
  let store: TestStore;
  let env: Record<string, string>;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    env = { DATABASE_URL: store.url! };
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection');
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('inbox stats: counts by status and type, and the oldest unprocessed event', async () => {
    const old = acted('cor_s', 'read');
    await insertEnvelopes(store.db, [old, acted('cor_s', 'signed'), envelope('webhook.test', { message: 'x' })]);
    await createPastPartitions(store.db, 1);
    await store.db.query(`UPDATE inbox SET received_at = now() - interval '2 hours' WHERE event_id = $1`, [old.event_id]);
    await store.db.query(`UPDATE inbox SET status = 'dead' WHERE type = 'webhook.test'`);
    const json = await runCli(['inbox', 'stats', '--json'], env);
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout) as {
      by_status: Record<string, number>;
      by_type: Record<string, Record<string, number>>;
      total: number;
      oldest_unprocessed: { event_id: string; age_seconds: number };
    };
    expect(stats.by_status).toEqual({ received: 2, dead: 1 });
    expect(stats.by_type).toEqual({ 'participant.acted': { received: 2 }, 'webhook.test': { dead: 1 } });
    expect(stats.total).toBe(3);
    expect(stats.oldest_unprocessed.event_id).toBe(old.event_id);
    expect(stats.oldest_unprocessed.age_seconds).toBeGreaterThanOrEqual(7200);
    const text = await runCli(['inbox', 'stats'], env);
    expect(text.stdout).toMatch(/participant\.acted\s+2/);
    expect(text.stdout).toMatch(/oldest unprocessed: .* received 2h ago/);
  });

  it('inbox replay: one by id or many by status, with a dry run, and clear errors for bad flags', async () => {
    const a = acted('cor_1', 'x');
    const b = envelope('wallet.debited', { amount: 1 });
    await insertEnvelopes(store.db, [a, b]);
    await store.db.query(`UPDATE inbox SET status = 'dead', attempts = 10, last_error = 'boom'`);

    const dry = await runCli(['inbox', 'replay', '--status', 'dead', '--dry-run'], env);
    expect(dry).toMatchObject({ code: 0, stdout: expect.stringMatching(/would replay up to 2 dead event\(s\)/) });
    expect(await countByStatus(store.db)).toEqual({ dead: 2 });

    const one = await runCli(['inbox', 'replay', a.event_id], env);
    expect(one).toMatchObject({ code: 0, stdout: expect.stringMatching(/replayed .* \(was dead\)/) });
    const again = await runCli(['inbox', 'replay', a.event_id], env);
    expect(again).toMatchObject({ code: 1, stderr: expect.stringMatching(/already waiting to be processed/) });

    const many = await runCli(['inbox', 'replay', '--status', 'dead', '--type', 'wallet.debited', '--since', '1h', '--json'], env);
    expect(JSON.parse(many.stdout)).toMatchObject({ matched: 1, replayed: 1 });
    expect(await countByStatus(store.db)).toEqual({ received: 2 });
    // The two replays (not the dry run, nor the refused one) are in the operators' audit, as the CLI's.
    const audit = await store.db.query<{ action: string; via: string; target: string; affected: number }>(
      `SELECT action, via, target, affected FROM console_audit ORDER BY audit_id`,
    );
    expect(audit.rows).toEqual([
      { action: 'replay_event', via: 'cli', target: a.event_id, affected: 1 },
      { action: 'replay_matching', via: 'cli', target: 'status dead, type wallet.debited, since 1h', affected: 1 },
    ]);

    expect(await runCli(['inbox', 'replay'], env)).toMatchObject({
      code: 64,
      stderr: expect.stringMatching(/Give an event id, or --status/),
    });
    expect(await runCli(['inbox', 'replay', '--status', 'processed'], env)).toMatchObject({
      code: 64,
      stderr: expect.stringMatching(/'--status <status>' argument 'processed' is invalid. Allowed choices are dead, quarantined/),
    });
    expect(await runCli(['inbox', 'replay', '--status', 'dead', '--since', 'yesterday'], env)).toMatchObject({
      code: 64,
      stderr: expect.stringMatching(/--since: expected a duration/),
    });
    expect(await runCli(['inbox', 'replay', a.event_id, '--status', 'dead'], env)).toMatchObject({
      code: 64,
      stderr: expect.stringMatching(/not both/),
    });
    expect(await runCli(['inbox', 'replay', 'evt_missing'], env)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/No event evt_missing/),
    });
    const help = await runCli(['inbox', 'replay', '--help'], env);
    expect(help.stdout).toMatch(/Examples:/);
  });

  it('inbox prune: retired, and says what replaced it without changing a row', async () => {
    const old = acted('cor_1', 'read');
    await insertEnvelopes(store.db, [old]);
    await store.db.query(`UPDATE inbox SET status = 'processed', processed_at = now() - interval '40 days' WHERE event_id = $1`, [
      old.event_id,
    ]);
    const run = await runCli(['inbox', 'prune', '--older-than', '30d'], env);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/retention run/);
    const rows = await store.db.query<{ pruned: boolean }>('SELECT pruned_at IS NOT NULL AS pruned FROM inbox WHERE event_id = $1', [
      old.event_id,
    ]);
    expect(rows.rows).toEqual([{ pruned: false }]);
  });

  it('correspondence show: the projection as a table or JSON', async () => {
    const postroom = createPostroom({ db: store.db, worker: { listen: false } });
    await insertEnvelopes(store.db, [
      envelope(
        'correspondence.created',
        {
          correspondence_id: 'cor_show',
          kind: 'letter',
          subject: 'Payslip',
          status: 'live',
          participants: [{ participant_id: 'par_1', ref: 'emp-42', state: 'pending' }],
        },
        '2026-01-01T00:00:00Z',
      ),
      envelope(
        'participant.acted',
        { correspondence_id: 'cor_show', participant_id: 'par_1', act: 'read', ref: 'emp-42' },
        '2026-01-01T00:01:00Z',
      ),
    ]);
    await postroom.drain();
    const text = await runCli(['correspondence', 'show', 'cor_show'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/status\s+live/);
    expect(text.stdout).toMatch(/par_1\s+emp-42\s+delivered\s+read/);
    const json = await runCli(['correspondence', 'show', 'cor_show', '--json'], env);
    expect(JSON.parse(json.stdout)).toMatchObject({
      correspondence_id: 'cor_show',
      status: 'live',
      participants: [{ participant_id: 'par_1', state: 'delivered', last_act: 'read' }],
    });
    expect(await runCli(['correspondence', 'show', 'cor_nope'], env)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/No event has named correspondence cor_nope/),
    });
  });
});
