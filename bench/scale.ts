/**
 * Costs flat as the store grows (`npm run bench:scale`): the same measurements on a store of 100k events
 * and on one of 10M events of history (BENCH_SCALE_ROWS) with 100M ids in the ledger (BENCH_SCALE_LEDGER_IDS:
 * the ids of years of events whose days retention dropped), in one run. The history spans the 89 days
 * before today, one partition a day, as retention keeps it. Filling a ledger of 100M ids takes many minutes:
 * CI never runs this. Bounded:
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
import { listInbox } from '../src/inbox/read-queries.js';
import { runRetention } from '../src/inbox/retention.js';
import { benchDatabase } from './lib/pg.js';
import { stop } from './lib/processes.js';
import { median, startPostroom } from './lib/receivers.js';
import { SANDBOX_KEY, cli, control, startSandbox } from './lib/cli.js';
import { table, writeResult } from './lib/report.js';
import { requireWrk, runWrk, writeRequests } from './lib/wrk.js';
import { benchConsoleScale } from './console-scale.js';

const SECRET = 'whsec_bench_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';
const CHUNK = 500_000;
const LEDGER_CHUNK = 5_000_000;

const HISTORY_DAYS = 89;

/**
 * History: `rows` processed events over the 89 days before now, every one with its signed bytes, in the
 * partition of its day; their ids in the ledger, and as many more ids of events whose days are gone
 * (received 400 days ago) as make `ledgerIds`. The ledger's index is built once at the end, as a restore
 * would: inserting 100M random ids one by one into a hash index takes far longer and ends the same.
 */
async function grow(db: Db, rows: number, ledgerIds: number): Promise<void> {
  await db.query(`SELECT inbox_partition_create((now() AT TIME ZONE 'UTC')::date - i) FROM generate_series(0, $1::int) i`, [HISTORY_DAYS]);
  await db.exec('ALTER TABLE inbox_ids DROP CONSTRAINT inbox_ids_event_id_excl');
  const stepSeconds = (HISTORY_DAYS * 86_400) / rows;
  for (let lo = 0; lo < rows; lo += CHUNK) {
    const hi = Math.min(rows, lo + CHUNK);
    await db.query(
      `WITH put AS (
         INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, correspondence_id, source)
         SELECT 'evt_' || md5(g::text), (ARRAY['participant.acted', 'correspondence.created', 'wallet.debited'])[1 + g % 3],
                t, t, convert_to('{"event_id":"evt_' || md5(g::text) || '","type":"participant.acted","at":"2026-01-01T00:00:00Z","data":{}}', 'UTF8'),
                'processed', 1, t + interval '1 second', 'cor_' || (g % 100000), 'webhook'
         FROM generate_series($1::int, $2::int - 1) g,
              LATERAL (SELECT now() - interval '${HISTORY_DAYS} days' + make_interval(secs => g * $3::float8) AS t) x
         RETURNING event_id, received_at)
       INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM put`,
      [lo, hi, stepSeconds],
    );
  }
  for (let lo = rows; lo < ledgerIds; lo += LEDGER_CHUNK) {
    const hi = Math.min(ledgerIds, lo + LEDGER_CHUNK);
    await db.query(
      `INSERT INTO inbox_ids (event_id, received_at)
       SELECT 'evt_' || md5(g::text), now() - interval '400 days' FROM generate_series($1::int, $2::int - 1) g`,
      [lo, hi],
    );
  }
  await db.exec('ALTER TABLE inbox_ids ADD CONSTRAINT inbox_ids_event_id_excl EXCLUDE USING hash (event_id WITH =)');
  await db.query('SELECT inbox_tally_rebuild()');
  await db.exec('VACUUM ANALYZE inbox');
  await db.exec('VACUUM ANALYZE inbox_ids');
}

/** Bytes on disk (heap, indexes, TOAST) of the ledger and of the history. */
async function storeBytes(db: Db): Promise<{ ledger: number; history: number }> {
  const res = await db.query<{ ledger: string; history: string }>(
    `SELECT pg_total_relation_size('inbox_ids')::bigint AS ledger,
            (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('inbox') WHERE isleaf)::bigint AS history`,
  );
  return { ledger: Number(res.rows[0]!.ledger), history: Number(res.rows[0]!.history) };
}

/**
 * One retention run that drops a day of `rows` finished events (200 days old, past the 90-day default):
 * its time, the history's size before and after, and the partition's own size.
 */
async function measureRetentionDrop(db: Db, rows: number): Promise<Record<string, number>> {
  const day = (await db.query<{ d: string }>(`SELECT ((now() AT TIME ZONE 'UTC')::date - 200)::text AS d`)).rows[0]!.d;
  await db.query('SELECT inbox_partition_create($1::date)', [day]);
  const partition = `inbox_p${day.replaceAll('-', '')}`;
  for (let lo = 0; lo < rows; lo += CHUNK) {
    await db.query(
      `INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, correspondence_id, source)
       SELECT 'evt_drop_' || g, 'participant.acted', t, t, convert_to('{"event_id":"evt_drop_' || g || '","data":{}}', 'UTF8'),
              'processed', 1, t, 'cor_' || (g % 100000), 'webhook'
       FROM generate_series($1::int, $2::int - 1) g, LATERAL (SELECT $3::date + make_interval(secs => (g % 86000)) AS t) x`,
      [lo, Math.min(rows, lo + CHUNK), day],
    );
  }
  await db.exec(`VACUUM ANALYZE ${partition}`);
  const partitionBytes = Number(
    (await db.query<{ n: string }>('SELECT pg_total_relation_size($1::regclass)::bigint AS n', [partition])).rows[0]!.n,
  );
  const before = (await storeBytes(db)).history;
  const t = performance.now();
  const report = await runRetention({ db, logger: silentLogger(), keepDays: 90 });
  const ms = performance.now() - t;
  const after = (await storeBytes(db)).history;
  if (!report.dropped.some((d) => d.partition === partition))
    throw new Error(`retention kept ${partition}: ${JSON.stringify(report.kept)}`);
  return {
    'drop rows': rows,
    'retention run ms': Math.round(ms),
    'partition MB': Math.round(partitionBytes / 1048576),
    'history MB before': Math.round(before / 1048576),
    'history MB after': Math.round(after / 1048576),
  };
}

/**
 * The cluster's write-ahead log so far: bytes, and full-page images (a page's first change after a checkpoint
 * logs the whole page). Cluster-wide, so the figure is ingest's only while nothing else writes; the bench runs
 * alone.
 */
async function walSoFar(db: Db): Promise<{ bytes: number; fpi: number }> {
  const res = await db.query<{ bytes: string; fpi: string }>('SELECT wal_bytes::bigint AS bytes, wal_fpi AS fpi FROM pg_stat_wal');
  return { bytes: Number(res.rows[0]!.bytes), fpi: Number(res.rows[0]!.fpi) };
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
    await db.query('DELETE FROM inbox_ids WHERE received_at >= $1', [since]);
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
      const wal0 = await walSoFar(db);
      const w = await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds });
      const wal1 = await walSoFar(db);
      out['ingest req/s'] = Math.round(w.requests / w.durationS);
      out['ingest p99 ms'] = w.p99Ms;
      out['ingest WAL B/req'] = Math.round((wal1.bytes - wal0.bytes) / w.requests);
      out['ingest full pages/req'] = Number(((wal1.fpi - wal0.fpi) / w.requests).toFixed(2));
    } finally {
      fs.rmSync(reqs.file, { force: true });
    }
  } finally {
    await stop(server);
  }
  // The ingested events are a backlog now; the claim measurement wants the same backlog at both sizes.
  await db.query(`UPDATE inbox SET status = 'processed', processed_at = now() WHERE status = 'received'`);
  await db.query(
    `INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, correspondence_id)
     SELECT 'evt_backlog_' || $1::int || '_' || g, 'participant.acted', now(), now(), convert_to('{}', 'UTF8'), 'cor_b' || (g % 200) FROM generate_series(1, 1000) g`,
    [rows],
  );
  // As autovacuum would have by now: the ingested rows just finished leave dead entries in the partial indexes.
  await db.exec('VACUUM ANALYZE inbox');
  // Every claim starts from the same backlog: the rows the last one took are handed back, untimed.
  // Sixty claims: one is a few milliseconds, and fifteen gave medians that moved by half between rounds.
  const claims: number[] = [];
  for (let i = 0; i < 60; i++) {
    const t = performance.now();
    const got = await claimBatch(db, { workerId: `bench-${rows}`, limit: 100, orderingHoldSeconds: 60 });
    claims.push(performance.now() - t);
    await db.query('DELETE FROM inbox_attempts WHERE batch_id = $1::bigint', [got!.batchId]);
  }
  out['claim 100 ms'] = median(claims);
  out['inbox stats ms'] = await timeMs(() => inboxStats(db), 60);
  out['inbox list by correspondence ms'] = await timeMs(() => listInbox(db, { correspondenceId: 'cor_4242', limit: 50 }), 60);
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

async function inboxOf(rows: number, ledgerIds: number): Promise<Inbox> {
  const database = await benchDatabase();
  // No statement timeout: at 100 million ids, rebuilding the ledger's hash index is one statement of minutes.
  const db = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger(), statementTimeoutMs: 0 });
  try {
    await migrate(db);
    await grow(db, rows, Math.max(rows, ledgerIds));
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
  options: { small?: number; large?: number; ledgerIds?: number; dropRows?: number; seconds?: number; rounds?: number } = {},
): Promise<Record<string, unknown>> {
  requireWrk();
  const small = options.small ?? 100_000;
  const large = options.large ?? 10_000_000;
  const ledgerIds = options.ledgerIds ?? 100_000_000;
  const dropRows = options.dropRows ?? 1_000_000;
  let bytes: Record<string, number> = {};
  let drop: Record<string, number> = {};
  const seconds = options.seconds ?? 10;
  const rounds = options.rounds ?? 3;
  const sandbox = await startSandbox(19_950 + Math.floor(Math.random() * 40));
  const inboxes: Inbox[] = [];
  const rows: Array<Record<string, number>> = [];
  const perRound: Array<Record<string, number>> = [];
  const started = Date.now();
  let growSeconds = 0;
  try {
    inboxes.push(await inboxOf(small, small));
    const g = Date.now();
    inboxes.push(await inboxOf(large, ledgerIds));
    growSeconds = (Date.now() - g) / 1000;
    const sizes = await storeBytes(inboxes[1]!.db);
    bytes = {
      'ledger ids': Math.max(large, ledgerIds),
      'history events': large,
      'ledger MB': Math.round(sizes.ledger / 1048576),
      'history MB': Math.round(sizes.history / 1048576),
      'ledger bytes per million ids': Math.round(sizes.ledger / (Math.max(large, ledgerIds) / 1e6)),
      'history bytes per million events': Math.round(sizes.history / (large / 1e6)),
    };
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
            // Full pages per request explain the WAL ratio; at the small size they are near 0, so no ratio of their own.
            .filter((k) => k !== 'inbox rows' && !k.includes('full pages'))
            // A cost at the large size over the small; for a rate, the small size's over the large.
            .map((k) => [k, k.includes('req/s') ? s[k]! / l[k]! : l[k]! / s[k]!]),
        ),
      );
    }
    drop = await measureRetentionDrop(inboxes[1]!.db, dropRows);
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
  table(rows, ['round', ...Object.keys(rows[0]!).filter((k) => k !== 'round')]);
  console.log(
    'cost at the large size / at the small size, each round, and the median (target ≤ 1.25; for ingest, small rate / large rate):',
  );
  for (const k of keys) {
    const each = perRound.map((p) => `${p[k]!.toFixed(2)}x`).join(' / ');
    console.log(`  ${k.padEnd(34)} ${ratios[k]!.toFixed(2)}x   (${each})`);
  }
  console.log('\nbytes on disk at the large size:');
  for (const [k, v] of Object.entries(bytes)) console.log(`  ${k.padEnd(34)} ${v.toLocaleString('en-US')}`);
  console.log('one retention run dropping a day (target < 2 s, history smaller by the partition):');
  for (const [k, v] of Object.entries(drop)) console.log(`  ${k.padEnd(34)} ${v.toLocaleString('en-US')}`);
  return {
    small,
    large,
    ledgerIds,
    seconds,
    rounds,
    growSeconds,
    totalSeconds: (Date.now() - started) / 1000,
    rows,
    perRound,
    ratios,
    bytes,
    drop,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchScale({
    large: Number(process.env.BENCH_SCALE_ROWS ?? 10_000_000),
    ledgerIds: Number(process.env.BENCH_SCALE_LEDGER_IDS ?? 100_000_000),
    dropRows: Number(process.env.BENCH_SCALE_DROP_ROWS ?? 1_000_000),
    seconds: Number(process.env.BENCH_SECONDS ?? 10),
    rounds: Number(process.env.BENCH_SCALE_ROUNDS ?? 3),
  });
  console.log(`\nwrote ${writeResult('scale', result)}`);
  // The console's pages on an inbox of the large size (bench/console-scale.ts).
  const pages = await benchConsoleScale({ rows: Number(process.env.BENCH_SCALE_ROWS ?? 10_000_000) });
  console.log(`\nwrote ${writeResult('console-scale', pages)}`);
}
