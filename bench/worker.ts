/**
 * Worker: drain 50,000 received events with a no-op handler (projection on),
 * and the same count of no-op jobs through graphile-worker, in the same run.
 */
import { randomUUID } from 'node:crypto';
import { Logger as GraphileLogger, run as runGraphile, runMigrations } from 'graphile-worker';
import pg from 'pg';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { insertInboxBatch } from '../src/inbox/insert-queries.js';
import type { NewInboxEvent } from '../src/inbox/types.js';
import { silentLogger } from '../src/logging/logger.js';
import { createPostroom } from '../src/app/postroom.js';
import { benchDatabase } from './lib/pg.js';
import { sampleRss } from './lib/processes.js';
import { table, writeResult } from './lib/report.js';

const ACTS = ['delivered', 'read', 'approved', 'signed'];

function event(i: number, correspondences: number): NewInboxEvent {
  const cid = `cor_${i % correspondences}`;
  const at = new Date(Date.UTC(2026, 10, 20, 10, 0, 0, i)).toISOString();
  const body = {
    event_id: `evt_${randomUUID()}`,
    type: 'participant.acted',
    at,
    data: { correspondence_id: cid, participant_id: `par_${i % 3}`, act: ACTS[i % 4], ref: `emp-${i % 3}` },
  };
  const json = JSON.stringify(body);
  return {
    eventId: body.event_id,
    type: body.type,
    occurredAt: at,
    payloadJson: json,
    rawBody: Buffer.from(json),
    signatureHeader: null,
    headers: null,
    endpointId: null,
    source: 'webhook',
    correspondenceId: cid,
    secretIndex: null,
    status: 'received',
    lastError: null,
  };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('benchmark did not finish in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function benchWorker(
  options: { events?: number; correspondences?: number; concurrency?: number } = {},
): Promise<Record<string, unknown>> {
  const n = options.events ?? 50_000;
  const correspondences = options.correspondences ?? 5_000;
  const concurrency = options.concurrency ?? 4;
  const database = await benchDatabase();
  const rows: Array<Record<string, string | number>> = [];
  try {
    const setup = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger() });
    await migrate(setup);
    for (let i = 0; i < n; i += 1000)
      await insertInboxBatch(
        setup,
        Array.from({ length: Math.min(1000, n - i) }, (_, k) => event(i + k, correspondences)),
      );
    await setup.exec('VACUUM ANALYZE inbox');

    // postroom: the worker as `serve` runs it, with the projection, a no-op user handler.
    const db = createPgDb({ url: database.url, poolSize: concurrency + 1, logger: silentLogger() });
    const postroom = createPostroom({ db, logger: silentLogger(), worker: { concurrency, batchSize: 100, pollIntervalMs: 20 } });
    postroom.on('participant.acted', async () => undefined);
    const rss = sampleRss(process.pid);
    let started = performance.now();
    await postroom.start();
    await waitFor(
      async () => (await setup.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbox WHERE status = 'processed'`)).rows[0]!.n >= n,
      600_000,
    );
    let seconds = (performance.now() - started) / 1000;
    await postroom.stop(5000);
    await db.close();
    rows.push({
      worker: `postroom (projection on, ${concurrency} loops, batch 100)`,
      events: n,
      seconds,
      'events/s': Math.round(n / seconds),
      'RSS MiB': Math.round(rss.stop()),
    });
    const participants = (await setup.query<{ n: number }>('SELECT count(*)::int AS n FROM participant_projection')).rows[0]!.n;
    await setup.close();

    // graphile-worker: the job queue a user would reach for, same count of no-op jobs, same concurrency.
    await runMigrations({ connectionString: database.url, logger: quietGraphileLogger() });
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    await c.query(`SELECT graphile_worker.add_job('noop', json_build_object('i', g)) FROM generate_series(1, $1::int) g`, [n]);
    await c.end();
    let done = 0;
    const rss2 = sampleRss(process.pid);
    started = performance.now();
    const runner = await runGraphile({
      connectionString: database.url,
      concurrency,
      noHandleSignals: true,
      pollInterval: 20,
      logger: quietGraphileLogger(),
      taskList: {
        noop: async () => {
          done++;
        },
      },
    });
    await waitFor(async () => done >= n, 600_000);
    seconds = (performance.now() - started) / 1000;
    await runner.stop();
    rows.push({
      worker: `graphile-worker 0.16 (no-op task, concurrency ${concurrency})`,
      events: n,
      seconds,
      'events/s': Math.round(n / seconds),
      'RSS MiB': Math.round(rss2.stop()),
    });

    const ratio = (rows[0]!['events/s'] as number) / (rows[1]!['events/s'] as number);
    console.log(
      `\nWorker: drain ${n.toLocaleString('en-US')} received events over ${correspondences.toLocaleString('en-US')} correspondences (postroom projected ${participants} participants)`,
    );
    table(rows, ['worker', 'events', 'seconds', 'events/s', 'RSS MiB']);
    console.log(`postroom / graphile-worker             ${ratio.toFixed(2)}x`);
    return { events: n, correspondences, concurrency, rows, ratios: { 'postroom / graphile-worker': ratio } };
  } finally {
    await database.drop();
  }
}

/** graphile-worker logs every job at info; keep errors only so the table stays readable. */
function quietGraphileLogger(): GraphileLogger {
  return new GraphileLogger(() => (level, message) => {
    if (level === 'error') console.error(message);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchWorker({ events: Number(process.env.BENCH_EVENTS ?? 50_000) });
  console.log(`\nwrote ${writeResult('worker', result)}`);
}
