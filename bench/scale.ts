/**
 * Costs flat as the inbox grows (`npm run bench -- scale`, or BENCH_SCALE_ROWS):
 * the same measurements on an inbox of 100k rows and on one of 10M (nearly all
 * processed and pruned, as an inbox looks after a year), in one run. Bounded:
 * rows are generated inside Postgres in chunks and the databases are dropped at
 * the end.
 *
 * Both inboxes are up at once, each in its own database, and the measurements
 * alternate between them for BENCH_SCALE_ROUNDS rounds (3 by default; each round
 * starts with the other size). Each round's ratio compares two measurements
 * taken a minute apart, and the median of those ratios is reported: measured
 * once each, ten minutes apart, the two sizes compare two states of a shared
 * machine rather than two inboxes (one build's ingest read 2.77x, then 0.90x,
 * that way). What a round adds to an inbox (the ingested events, the
 * claim backlog) is deleted and vacuumed away after it, so every round measures
 * the same two sizes.
 *
 * Measured at each size: ingest (wrk against `serve --role ingress`), a worker
 * claim of 100 from a backlog of 1,000, a /metrics scrape, `inbox stats`, the
 * inbox side of reconcile and audit (their per-page event-id lookup), and both
 * commands end to end as on-call runs them (`postroom reconcile` over 2,000 dead
 * deliveries and `postroom audit --since 24h` over 2,000 delivered ones, against
 * the sandbox as its own process; a fresh endpoint per size and round, so every
 * measurement does the same work).
 */
import fs from 'node:fs';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import type { Db } from '../src/db/types.js';
import { silentLogger } from '../src/logging/logger.js';
import { eventIdsInInbox } from '../src/reconciler/state-queries.js';
import { claimBatch } from '../src/worker/claim-queries.js';
import { inboxStats } from '../src/inbox/admin-queries.js';
import { benchDatabase } from './lib/pg.js';
import { stop } from './lib/processes.js';
import { median, startPostroom } from './lib/receivers.js';
import { SANDBOX_KEY, cli, control, startSandbox } from './lib/cli.js';
import { table, writeResult } from './lib/report.js';
import { requireWrk, runWrk, writeRequests } from './lib/wrk.js';
import { benchConsoleScale } from './console-scale.js';

const SECRET = 'whsec_bench_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';
const CHUNK = 500_000;

/** Finished history: 95% pruned (no bytes), the rest processed recently with their bytes; ids as the service makes them. */
async function grow(db: Db, from: number, to: number): Promise<void> {
  for (let lo = from; lo < to; lo += CHUNK) {
    const hi = Math.min(to, lo + CHUNK);
    await db.query(
      `INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, pruned_at, correspondence_id, source)
       SELECT 'evt_' || md5(g::text), (ARRAY['participant.acted', 'correspondence.created', 'wallet.debited'])[1 + g % 3],
              t, t, CASE WHEN g % 20 = 0 THEN convert_to('{"event_id":"evt_' || md5(g::text) || '","type":"participant.acted","at":"2026-01-01T00:00:00Z","data":{}}', 'UTF8') END,
              'processed', 1, t + interval '1 second', CASE WHEN g % 20 <> 0 THEN t + interval '31 days' END, 'cor_' || (g % 100000), 'webhook'
       FROM generate_series($1::int, $2::int - 1) g, LATERAL (SELECT now() - interval '400 days' + g * interval '3 seconds' AS t) x`,
      [lo, hi],
    );
  }
  await db.query('SELECT inbox_tally_rebuild()');
  await db.exec('VACUUM ANALYZE inbox');
}

async function timeMs(fn: () => Promise<unknown>, n: number): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

const COMMAND_DELIVERIES = 2000;

/** One CLI command's wall time (process start included, as on-call sees it), median of `n`. */
async function commandMs(args: string[], env: Record<string, string>, okExits: number[], n: number): Promise<number> {
  return timeMs(async () => {
    const run = cli(args, env);
    const code = await run.exited;
    if (!okExits.includes(code ?? -1)) throw new Error(`postroom ${args.join(' ')} exited ${code}: ${run.err().slice(0, 500)}`);
  }, n);
}

/** A fresh sandbox endpoint holding COMMAND_DELIVERIES deliveries of one status: the same work at every size. */
async function seededEndpoint(sandboxBase: string, status: 'dead' | 'delivered'): Promise<string> {
  const endpoint = await control(sandboxBase, 'POST', '/sandbox/endpoints', { url: 'http://127.0.0.1:9/never' });
  await control(sandboxBase, 'POST', '/sandbox/seed-deliveries', {
    endpoint_id: endpoint.endpoint_id,
    count: COMMAND_DELIVERIES,
    status,
    event_type: 'participant.acted',
  });
  return String(endpoint.endpoint_id);
}

/** `reconcile` and `audit --since 24h` end to end, each on its own fresh endpoint of the sandbox. */
async function measureCommands(url: string, sandboxBase: string, out: Record<string, number>): Promise<void> {
  const env = { DATABASE_URL: url, POSTROOM_API_BASE_URL: sandboxBase, POSTROOM_API_KEY: SANDBOX_KEY };
  const dead = await seededEndpoint(sandboxBase, 'dead');
  // The first run records every gap, later runs find them recorded: the median is a repeat run, at both sizes.
  out['reconcile ms'] = await commandMs(['reconcile', '--endpoint', dead, '--json'], env, [0, 2], 5);
  const delivered = await seededEndpoint(sandboxBase, 'delivered');
  // None of the seeded events is in the inbox, so audit reports them missing (exit 3): the same lookups at both sizes.
  out['audit 24h ms'] = await commandMs(['audit', '--since', '24h', '--endpoint', delivered, '--json'], env, [0, 3], 5);
}

async function measure(db: Db, url: string, rows: number, seconds: number, sandboxBase: string): Promise<Record<string, number>> {
  // Everything this measurement adds to the inbox is received from here on; the grown history is older.
  const since = (await db.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
  try {
    return await measureAt(db, url, rows, seconds, sandboxBase);
  } finally {
    // Back to the size the next round must measure (the tally follows by its delete trigger).
    await db.query('DELETE FROM inbox WHERE received_at >= $1', [since]);
    await db.exec('VACUUM ANALYZE inbox');
  }
}

async function measureAt(db: Db, url: string, rows: number, seconds: number, sandboxBase: string): Promise<Record<string, number>> {
  const port = 19_600 + Math.floor(Math.random() * 300);
  const server = await startPostroom('ingress', port, { DATABASE_URL: url, POSTROOM_WEBHOOK_SECRETS: SECRET });
  const out: Record<string, number> = { 'inbox rows': rows };
  try {
    out['/metrics scrape ms'] = await timeMs(async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), 60);
    const reqs = writeRequests(seconds * 30_000, SECRET, 0);
    try {
      const w = await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds });
      out['ingest req/s'] = Math.round(w.requests / w.durationS);
      out['ingest p99 ms'] = w.p99Ms;
    } finally {
      fs.rmSync(reqs.file, { force: true });
    }
  } finally {
    await stop(server);
  }
  // The ingested events are a backlog now; the claim measurement wants the same backlog at both sizes.
  await db.query(`UPDATE inbox SET status = 'processed', processed_at = now() WHERE status = 'received'`);
  await db.query(
    `INSERT INTO inbox (event_id, type, occurred_at, raw_body, correspondence_id)
     SELECT 'evt_backlog_' || $1::int || '_' || g, 'participant.acted', now(), convert_to('{}', 'UTF8'), 'cor_b' || (g % 200) FROM generate_series(1, 1000) g`,
    [rows],
  );
  // As autovacuum would have by now: the ingested rows just finished leave dead entries in the partial indexes.
  await db.exec('VACUUM ANALYZE inbox');
  // Every claim starts from the same backlog: the rows the last one took are handed back, untimed.
  const claims: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t = performance.now();
    const got = await claimBatch(db, { workerId: `bench-${rows}`, limit: 100, orderingHoldSeconds: 60 });
    claims.push(performance.now() - t);
    await db.query('DELETE FROM inbox_attempts WHERE batch_id = $1::bigint', [got!.batchId]);
  }
  out['claim 100 ms'] = median(claims);
  out['inbox stats ms'] = await timeMs(() => inboxStats(db), 60);
  const ids = Array.from({ length: 200 }, (_, i) => (i % 2 ? `evt_missing_${i}` : `evt_${i}`));
  out['reconcile/audit page lookup ms'] = await timeMs(() => eventIdsInInbox(db, ids), 60);
  await db.query(
    `UPDATE inbox SET status = 'processed', processed_at = now(), locked_by = NULL, locked_until = NULL WHERE status IN ('received', 'processing')`,
  );
  await measureCommands(url, sandboxBase, out);
  return out;
}

interface Inbox {
  rows: number;
  url: string;
  db: Db;
  drop(): Promise<void>;
}

async function inboxOf(rows: number): Promise<Inbox> {
  const database = await benchDatabase();
  const db = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger() });
  try {
    await migrate(db);
    await grow(db, 0, rows);
  } catch (err) {
    await db.close();
    await database.drop();
    throw err;
  }
  return {
    rows,
    url: database.url,
    db,
    async drop() {
      await db.close();
      await database.drop();
    },
  };
}

export async function benchScale(
  options: { small?: number; large?: number; seconds?: number; rounds?: number } = {},
): Promise<Record<string, unknown>> {
  requireWrk();
  const small = options.small ?? 100_000;
  const large = options.large ?? 10_000_000;
  const seconds = options.seconds ?? 10;
  const rounds = options.rounds ?? 3;
  const sandbox = await startSandbox(19_950 + Math.floor(Math.random() * 40));
  const inboxes: Inbox[] = [];
  const rows: Array<Record<string, number>> = [];
  const perRound: Array<Record<string, number>> = [];
  const started = Date.now();
  let growSeconds = 0;
  try {
    inboxes.push(await inboxOf(small));
    const g = Date.now();
    inboxes.push(await inboxOf(large));
    growSeconds = (Date.now() - g) / 1000;
    for (let r = 0; r < rounds; r++) {
      const measured = new Map<number, Record<string, number>>();
      for (const inbox of r % 2 === 0 ? inboxes : [...inboxes].reverse()) {
        const m = await measure(inbox.db, inbox.url, inbox.rows, seconds, sandbox.base);
        measured.set(inbox.rows, m);
        rows.push({ round: r + 1, ...m });
      }
      const [s, l] = [measured.get(small)!, measured.get(large)!];
      perRound.push(
        Object.fromEntries(
          Object.keys(s)
            .filter((k) => k !== 'inbox rows')
            // A cost at the large size over the small; for a rate, the small size's over the large.
            .map((k) => [k, k.includes('req/s') ? s[k]! / l[k]! : l[k]! / s[k]!]),
        ),
      );
    }
  } finally {
    await sandbox.stop();
    for (const inbox of inboxes) await inbox.drop();
  }
  const keys = Object.keys(perRound[0]!);
  const ratios = Object.fromEntries(keys.map((k) => [k, median(perRound.map((p) => p[k]!))]));
  console.log(
    `\nScale: the same measurements on inboxes of ${small.toLocaleString('en-US')} and ${large.toLocaleString('en-US')} rows ` +
      `(the large one grown in ${Math.round(growSeconds)} s), alternating, ${rounds} rounds; each figure a median within its round`,
  );
  table(rows, ['round', 'inbox rows', ...keys]);
  console.log(
    'cost at the large size / at the small size, each round, and the median (target ≤ 1.25; for ingest, small rate / large rate):',
  );
  for (const k of keys) {
    const each = perRound.map((p) => `${p[k]!.toFixed(2)}x`).join(' / ');
    console.log(`  ${k.padEnd(34)} ${ratios[k]!.toFixed(2)}x   (${each})`);
  }
  return { small, large, seconds, rounds, growSeconds, totalSeconds: (Date.now() - started) / 1000, rows, perRound, ratios };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchScale({
    large: Number(process.env.BENCH_SCALE_ROWS ?? 10_000_000),
    seconds: Number(process.env.BENCH_SECONDS ?? 10),
    rounds: Number(process.env.BENCH_SCALE_ROUNDS ?? 3),
  });
  console.log(`\nwrote ${writeResult('scale', result)}`);
  // The console's pages on an inbox of the large size (bench/console-scale.ts).
  const pages = await benchConsoleScale({ rows: Number(process.env.BENCH_SCALE_ROWS ?? 10_000_000) });
  console.log(`\nwrote ${writeResult('console-scale', pages)}`);
}
