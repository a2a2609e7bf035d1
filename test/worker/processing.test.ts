import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { captureLog } from '../support/log-capture.js';
import { countByStatus, createEffectsTable, EFFECT_SQL, envelope, inboxRow, insertEnvelopes, makeDue } from './support.js';

const kinds = await availableStoreKinds();

const FAST: Partial<WorkerOptions> = {
  pollIntervalMs: 50,
  retryBackoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
  maxAttempts: 3,
  listen: false,
};

const acted = (cid: string, pid: string, act: string, at: string) =>
  envelope('participant.acted', { correspondence_id: cid, participant_id: pid, act, ref: `ref-${pid}` }, at);

describe.each(kinds)('worker processing (%s)', (kind) => {
  let store: TestStore;
  let postroom: Postroom | undefined;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store.db);
  });
  beforeEach(async () => {
    await store.db.exec('TRUNCATE inbox, correspondence_projection, participant_projection, effects');
  });
  afterEach(async () => {
    await postroom?.stop(1000);
    postroom = undefined;
  });
  afterAll(async () => {
    await store?.cleanup();
  });

  it('runs handlers in the transaction that marks the row processed, and updates the projection', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    postroom = createPostroom({ db: store.db, metrics, worker: FAST });
    const seen: Array<{ id: string; attempt: number; source: string }> = [];
    postroom.on('participant.acted', async (event, ctx) => {
      seen.push({ id: event.event_id, attempt: ctx.attempt, source: ctx.source });
      await ctx.tx.query(EFFECT_SQL, [event.event_id, event.data.correspondence_id, 0]);
    });
    const events = [
      acted('cor_1', 'p1', 'delivered', '2026-01-01T00:00:01Z'),
      acted('cor_1', 'p1', 'read', '2026-01-01T00:00:02Z'),
      acted('cor_2', 'p9', 'approved', '2026-01-01T00:00:03Z'),
    ];
    await insertEnvelopes(store.db, events);

    const result = await postroom.drain();
    expect(result.by_status).toEqual({ processed: 3 });
    expect(seen).toEqual(events.map((e) => ({ id: e.event_id, attempt: 1, source: 'webhook' })));
    expect((await store.db.query('SELECT count(*)::int AS n FROM effects')).rows[0]).toEqual({ n: 3 });
    const row = await inboxRow(store.db, events[0]!.event_id);
    expect(row).toMatchObject({ status: 'processed', attempts: 1, locked_by: null });
    expect((await getProjectedCorrespondence(store.db, 'cor_1'))?.participants).toMatchObject([
      { participant_id: 'p1', state: 'delivered', last_act: 'read' },
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/postroom_events_processed_total\{event_type="participant.acted",status="processed"\} 3/);
    expect(text).toMatch(/postroom_handler_duration_seconds_count\{event_type="participant.acted"\} 3/);
    // One batch held all three; a drain's last claim finds nothing and is timed too.
    expect(text).toMatch(/postroom_worker_batch_duration_seconds_count 1\n/);
    expect(Number(/postroom_worker_claim_duration_seconds_count (\d+)/.exec(text)?.[1])).toBeGreaterThanOrEqual(2);
  });

  it('marks known types without handlers processed, and unknown types skipped unless a catch-all takes them', async () => {
    postroom = createPostroom({ db: store.db, worker: FAST });
    const sealed = envelope('correspondence.sealed', { correspondence_id: 'cor_s' }, '2026-01-01T00:00:01Z');
    const novel = envelope('correspondence.reminded', { correspondence_id: 'cor_s' }, '2026-01-01T00:00:02Z');
    await insertEnvelopes(store.db, [sealed, novel]);
    await postroom.drain();
    expect((await inboxRow(store.db, sealed.event_id)).status).toBe('processed');
    expect((await inboxRow(store.db, novel.event_id)).status).toBe('skipped');
    expect((await getProjectedCorrespondence(store.db, 'cor_s'))?.status).toBe('sealed');

    const caught: string[] = [];
    postroom.onUnknown((event) => void caught.push(event.type));
    const novel2 = envelope('campaign.archived', { campaign_id: 'c' }, '2026-01-01T00:00:03Z');
    await insertEnvelopes(store.db, [novel2]);
    await postroom.drain();
    expect(caught).toEqual(['campaign.archived']);
    expect((await inboxRow(store.db, novel2.event_id)).status).toBe('processed');
  });

  it('quarantines events whose data does not match the catalogue, with the reason, without holding others back', async () => {
    postroom = createPostroom({ db: store.db, worker: FAST });
    const handled: string[] = [];
    postroom.on('participant.acted', (e) => void handled.push(e.event_id));
    const bad = envelope('participant.acted', { correspondence_id: 'cor_q', participant_id: 'p1' }, '2026-01-01T00:00:01Z');
    const good = acted('cor_q', 'p1', 'read', '2026-01-01T00:00:02Z');
    await insertEnvelopes(store.db, [bad, good]);
    await postroom.drain();
    expect(await inboxRow(store.db, bad.event_id)).toMatchObject({ status: 'quarantined', last_error: expect.stringMatching(/act/) });
    expect(handled).toEqual([good.event_id]);
  });

  it("rolls back a failing handler's writes, keeps the error and retries with backoff; the projection follows the event anyway", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    postroom = createPostroom({ db: store.db, metrics, worker: FAST });
    let fail = true;
    postroom.on('participant.acted', async (event, ctx) => {
      await ctx.tx.query(EFFECT_SQL, [event.event_id, null, ctx.attempt]);
      if (fail) throw new Error('core system unavailable');
    });
    const e = acted('cor_f', 'p1', 'signed', '2026-01-01T00:00:01Z');
    await insertEnvelopes(store.db, [e]);
    await postroom.drain();

    const row = await inboxRow(store.db, e.event_id);
    expect(row).toMatchObject({ status: 'failed', attempts: 1, last_error: 'core system unavailable', locked_by: null });
    const wait = (
      await store.db.query<{ s: number }>(
        'SELECT extract(epoch FROM next_attempt_at - now())::float8 AS s FROM inbox WHERE event_id = $1',
        [e.event_id],
      )
    ).rows[0]!.s;
    expect(wait).toBeGreaterThan(20);
    expect((await store.db.query('SELECT count(*)::int AS n FROM effects')).rows[0]).toEqual({ n: 0 });
    expect((await getProjectedCorrespondence(store.db, 'cor_f'))?.participants[0]).toMatchObject({
      state: 'delivered',
      last_act: 'signed',
    });
    // Not due yet: draining does nothing.
    expect((await postroom.drain()).batches).toBe(0);

    fail = false;
    await makeDue(store.db);
    await postroom.drain();
    expect(await inboxRow(store.db, e.event_id)).toMatchObject({ status: 'processed', attempts: 2 });
    expect((await store.db.query('SELECT seq, n FROM effects')).rows).toEqual([{ seq: 2, n: 1 }]);
    expect(await metrics.registry.metrics()).toMatch(/postroom_handler_failures_total\{event_type="participant.acted"\} 1/);
  });

  it('isolates an event whose handler breaks its savepoint or times out from the rest of its batch', async () => {
    // The time-out must only ever cut the handler that hangs: under a loaded CI machine the other handlers'
    // two queries once took longer than 200 ms, so the bound is generous (the hanging one costs this test 1.5 s).
    postroom = createPostroom({ db: store.db, worker: { ...FAST, handlerTimeoutMs: 1500 } });
    let lateWrite: Promise<unknown> | undefined;
    postroom.on('participant.acted', async (event, ctx) => {
      await ctx.tx.query(EFFECT_SQL, [event.event_id, null, 0]);
      if (event.data.act === 'swallow') {
        // A handler that catches a database error and carries on would otherwise commit half its work.
        await ctx.tx.query('SELECT 1/0').catch(() => undefined);
      }
      if (event.data.act === 'hang') {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        lateWrite = ctx.tx.query(EFFECT_SQL, [`${event.event_id}-late`, null, 0]).catch((err: Error) => err.message);
      }
    });
    const swallow = acted('cor_a', 'p1', 'swallow', '2026-01-01T00:00:01Z');
    const hang = acted('cor_b', 'p1', 'hang', '2026-01-01T00:00:02Z');
    const fine = acted('cor_c', 'p1', 'read', '2026-01-01T00:00:03Z');
    await insertEnvelopes(store.db, [swallow, hang, fine]);
    const result = await postroom.drain();
    expect(result.by_status).toEqual({ failed: 2, processed: 1 });
    expect(await inboxRow(store.db, swallow.event_id)).toMatchObject({
      status: 'failed',
      last_error: expect.stringMatching(/handler_left_tx_aborted/),
    });
    expect(await inboxRow(store.db, hang.event_id)).toMatchObject({
      status: 'failed',
      last_error: expect.stringMatching(/handler_timeout/),
    });
    expect(await lateWrite).toMatch(/after the handler finished/);
    expect((await store.db.query<{ event_id: string }>('SELECT event_id FROM effects')).rows.map((r) => r.event_id)).toEqual([
      fine.event_id,
    ]);
  });

  it("gives a handler its event's logger, and a signal already aborted if it first looks after its time-out", async () => {
    // A handler that outlives its time-out and only then looks at ctx.signal must still be told to stop.
    const log = captureLog();
    const logger = createLogger({ level: 'info', destination: log.stream });
    postroom = createPostroom({ db: store.db, logger, worker: { ...FAST, handlerTimeoutMs: 200 } });
    let seen: { aborted: boolean; reason: unknown } | undefined;
    let looked: () => void = () => undefined;
    const lookedLate = new Promise<void>((resolve) => (looked = resolve));
    postroom.on('participant.acted', async (event, ctx) => {
      ctx.logger.info({ act: event.data.act }, 'handled');
      if (event.data.act !== 'slow') return;
      await new Promise((resolve) => setTimeout(resolve, 600));
      seen = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
      looked();
    });
    const slow = acted('cor_late', 'p1', 'slow', '2026-01-01T00:00:01Z');
    const quick = acted('cor_quick', 'p1', 'read', '2026-01-01T00:00:02Z');
    await insertEnvelopes(store.db, [slow, quick]);
    await postroom.drain();
    await lookedLate;
    expect(seen).toMatchObject({ aborted: true, reason: expect.objectContaining({ code: 'handler_timeout' }) });
    expect(log.lines().filter((l) => l.msg === 'handled')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event_id: slow.event_id, type: 'participant.acted', act: 'slow' }),
        expect.objectContaining({ event_id: quick.event_id, type: 'participant.acted', act: 'read' }),
      ]),
    );
  });

  it('gives a handler that copies its context the same logger and signal', async () => {
    // Part of the handler contract: a spread or destructured copy of ctx carries both (a context whose logger and
    // signal were getters on a prototype would lose them here).
    const log = captureLog();
    const logger = createLogger({ level: 'info', destination: log.stream });
    postroom = createPostroom({ db: store.db, logger, worker: FAST });
    const copies: Array<{ sameLogger: boolean; sameSignal: boolean; signal: unknown; eventId: string }> = [];
    postroom.on('participant.acted', (event, ctx) => {
      const copy = { ...ctx };
      copy.logger.info({ act: event.data.act }, 'copied');
      copies.push({
        sameLogger: copy.logger === ctx.logger,
        sameSignal: copy.signal === ctx.signal,
        signal: copy.signal,
        eventId: copy.eventId,
      });
    });
    const event = acted('cor_copy', 'p1', 'read', '2026-01-01T00:00:01Z');
    await insertEnvelopes(store.db, [event]);
    expect((await postroom.drain()).by_status).toEqual({ processed: 1 });
    expect(copies).toEqual([{ sameLogger: true, sameSignal: true, signal: expect.any(AbortSignal), eventId: event.event_id }]);
    expect((copies[0]!.signal as AbortSignal).aborted).toBe(false);
    expect(log.lines().filter((l) => l.msg === 'copied')).toEqual([
      expect.objectContaining({ event_id: event.event_id, type: 'participant.acted', act: 'read' }),
    ]);
  });

  it('goes dead after the maximum attempts with its last error, and releases nothing it should not', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    postroom = createPostroom({ db: store.db, metrics, worker: FAST });
    let calls = 0;
    postroom.on('correspondence.withdrawn', () => {
      calls++;
      throw new Error(`poison #${calls}`);
    });
    const poison = envelope('correspondence.withdrawn', { correspondence_id: 'cor_p' }, '2026-01-01T00:00:01Z');
    await insertEnvelopes(store.db, [poison]);
    for (let i = 0; i < 5; i++) {
      await makeDue(store.db);
      await postroom.drain();
    }
    expect(calls).toBe(3);
    expect(await inboxRow(store.db, poison.event_id)).toMatchObject({ status: 'dead', attempts: 3, last_error: 'poison #3' });
    // Counted once: the final-status counter, with no second counter for the same death.
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^postroom_events_processed_total\{event_type="correspondence.withdrawn",status="dead"\} 1$/m);
    expect(text).not.toMatch(/events_dead/);
  });

  it('retries the batch event by event when the transaction fails outside a handler, so one bad event cannot block the others', async () => {
    // A projection failure for one correspondence, the way a broken constraint or trigger would cause it.
    await store.db.exec(`
      CREATE OR REPLACE FUNCTION refuse_cor_boom() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.correspondence_id = 'cor_boom' THEN RAISE EXCEPTION 'projection refused cor_boom'; END IF;
        RETURN NEW;
      END $$;
      DROP TRIGGER IF EXISTS refuse_cor_boom ON correspondence_projection;
      CREATE TRIGGER refuse_cor_boom BEFORE INSERT OR UPDATE ON correspondence_projection FOR EACH ROW EXECUTE FUNCTION refuse_cor_boom();`);
    try {
      postroom = createPostroom({ db: store.db, worker: FAST });
      postroom.on('participant.acted', async (event, ctx) => void (await ctx.tx.query(EFFECT_SQL, [event.event_id, null, 0])));
      const events = [
        acted('cor_ok1', 'p', 'read', '2026-01-01T00:00:01Z'),
        acted('cor_boom', 'p', 'read', '2026-01-01T00:00:02Z'),
        acted('cor_ok2', 'p', 'read', '2026-01-01T00:00:03Z'),
      ];
      await insertEnvelopes(store.db, events);
      const result = await postroom.drain();
      expect(result.by_status).toEqual({ processed: 2, failed: 1 });
      expect(await inboxRow(store.db, events[1]!.event_id)).toMatchObject({
        status: 'failed',
        attempts: 1,
        last_error: expect.stringMatching(/projection refused cor_boom/),
      });
      for (const ok of [events[0]!, events[2]!])
        expect(await inboxRow(store.db, ok.event_id)).toMatchObject({ status: 'processed', attempts: 1 });
      expect((await store.db.query('SELECT count(*)::int AS n FROM effects')).rows[0]).toEqual({ n: 2 });
      // Each event left the batch's attempts row with its own outcome: nothing is left for the reaper to count again.
      expect((await store.db.query('SELECT count(*)::int AS n FROM inbox_attempts')).rows[0]).toEqual({ n: 0 });
    } finally {
      await store.db.exec('DROP TRIGGER refuse_cor_boom ON correspondence_projection');
    }
  });

  it('wakes on the inbox notification without waiting for the poll', async () => {
    postroom = createPostroom({ db: store.db, worker: { ...FAST, listen: true, pollIntervalMs: 600_000 } });
    await postroom.start();
    // The first loop iteration found nothing and now sleeps for ten minutes unless woken.
    await new Promise((r) => setTimeout(r, 200));
    await insertEnvelopes(store.db, [acted('cor_w', 'p', 'read', '2026-01-01T00:00:01Z')]);
    const until = Date.now() + 20_000;
    while ((await countByStatus(store.db)).processed !== 1) {
      if (Date.now() > until) throw new Error('not woken by NOTIFY');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
