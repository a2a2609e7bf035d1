/**
 * Postgres time per stored event, statement by statement (`npx tsx bench/statements.ts`, after `npm run build`).
 * bench/cpu.ts says how much CPU Postgres spends per event; this says on which statements. Each receiver runs
 * against a private cluster (bench/lib/private-pg.ts) with pg_stat_statements preloaded, which the machine's
 * shared cluster does not have and must not be restarted for. After a 2 s warm-up the statistics are reset,
 * the receiver takes STMT_SECONDS of the same wrk load as bench/cpu.ts (64 connections, unique signed events),
 * and every top-level statement's execution and planning time, rows, buffers and write-ahead log are divided
 * by the events stored. A commit's own work (the wait for the log to reach the disk) is in no statement's time:
 * bench/cpu.ts's Postgres CPU per event includes it, and parsing, binding and the protocol, so it reads higher.
 *
 * Knobs: STMT_RECEIVERS (default `ingress,serve`; any key bench/cpu.ts takes), STMT_SECONDS (default 10),
 * STMT_TOP (statements listed per receiver, default 12).
 */
import pg from 'pg';
import { stop } from './lib/processes.js';
import { startPrivateCluster } from './lib/private-pg.js';
import { table, writeResult } from './lib/report.js';
import { cachedRequests, requireWrk, runWrk } from './lib/wrk.js';

const keys = (process.env.STMT_RECEIVERS ?? 'ingress,serve').split(',');
const seconds = Number(process.env.STMT_SECONDS ?? 10);
const top = Number(process.env.STMT_TOP ?? 12);
requireWrk();

interface StatementCost {
  statement: string;
  calls: number;
  usPerEvent: number;
  msPerCall: number;
  rowsPerCall: number;
  buffersPerEvent: number;
  walBytesPerEvent: number;
}

/** One line of a statement's text: enough to know it (the queries' own modules hold the rest). */
function label(query: string): string {
  const flat = query
    .replace(/--[^\n]*/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > 90 ? `${flat.slice(0, 87)}...` : flat;
}

/**
 * The settings that shape a receiver's costs, read from the cluster the other benches use (DATABASE_URL, or the
 * machine's), so that this one differs from it only by the extension: on this machine, for one, autovacuum is off
 * there, and a vacuum or analyze in the middle of a run changes what the worker's statements read.
 */
const MIRRORED = [
  'autovacuum',
  'shared_buffers',
  'max_wal_size',
  'checkpoint_timeout',
  'wal_buffers',
  'work_mem',
  'jit',
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_compression',
];
async function sharedSettings(): Promise<Record<string, string>> {
  const shared = new pg.Client({ connectionString: process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres' });
  await shared.connect();
  try {
    const res = await shared.query<{ name: string; setting: string; unit: string | null }>(
      'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
      [MIRRORED],
    );
    return Object.fromEntries(res.rows.map((r) => [r.name, `'${asConf(r.setting, r.unit)}'`]));
  } finally {
    await shared.end();
  }
}

/** pg_settings gives a size in its unit (shared_buffers in 8 kB pages): as postgresql.conf reads it. -1 means automatic. */
function asConf(setting: string, unit: string | null): string {
  if (!unit || !/^\d+$/.test(setting)) return setting;
  return unit === '8kB' ? `${Number(setting) * 8}kB` : `${setting}${unit}`;
}

const mirrored = await sharedSettings();
console.log(
  `the private cluster mirrors: ${Object.entries(mirrored)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}`,
);
const cluster = await startPrivateCluster({
  ...mirrored,
  shared_preload_libraries: "'pg_stat_statements'",
  'pg_stat_statements.track': 'top',
  'pg_stat_statements.track_planning': 'on',
  'pg_stat_statements.max': '1000',
});
const cleanup = (): void => cluster.stop();
process.once('SIGINT', () => {
  cleanup();
  process.exit(130);
});
try {
  // bench/lib/pg.ts reads DATABASE_URL when it loads: the rigs must load after it names this cluster.
  process.env.DATABASE_URL = cluster.url;
  const { emptyStore, prepareDatabase, SECRET, startReceiver, tableOf } = await import('./lib/rigs.js');
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const reqs = cachedRequests(seconds * 60_000, SECRET);
  const results: Record<string, { events: number; ratePerSecond: number; processed?: number; statements: StatementCost[] }> = {};
  let port = 19_900 + Math.floor(Math.random() * 50);
  for (const key of keys) {
    const { database, setup, admin: rigAdmin, refUrl, release } = await prepareDatabase(key);
    const child = await startReceiver(key, ++port, database.url, refUrl);
    try {
      await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds: 2 });
      const { table: stored } = tableOf(key);
      await emptyStore(setup, key);
      await admin.query('CHECKPOINT');
      await admin.query('SELECT pg_stat_statements_reset()');
      const w = await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds });
      const dbName = new URL(database.url).pathname.slice(1);
      const rows = await admin.query<{
        query: string;
        calls: string;
        ms: number;
        rows: string;
        buffers: string;
        wal: string;
      }>(
        `SELECT s.query, s.calls, s.total_exec_time + s.total_plan_time AS ms, s.rows,
                s.shared_blks_hit + s.shared_blks_read AS buffers, s.wal_bytes AS wal
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
         WHERE d.datname = $1 ORDER BY ms DESC`,
        [dbName],
      );
      // Counted after the statistics are read (a count is a statement too), in one snapshot as bench/cpu.ts counts.
      const serve = key.startsWith('serve');
      const counted = await rigAdmin.query<{ n: string; finished: string | null }>(
        `SELECT count(*) AS n, ${serve ? `count(*) FILTER (WHERE status IN ('processed', 'skipped'))` : 'NULL'} AS finished
         FROM ${setup.schema}.${stored}`,
      );
      const events = Number(counted.rows[0]!.n);
      if (events === 0)
        throw new Error(`${key} stored no events in ${seconds} s of load; see its output above (is it running and migrated?)`);
      const finished = serve ? Number(counted.rows[0]!.finished) : undefined;
      const statements = rows.rows.map((r) => ({
        statement: label(r.query),
        calls: Number(r.calls),
        usPerEvent: (r.ms * 1000) / events,
        msPerCall: r.ms / Number(r.calls),
        rowsPerCall: Number(r.rows) / Number(r.calls),
        buffersPerEvent: Number(r.buffers) / events,
        walBytesPerEvent: Number(r.wal) / events,
      }));
      results[key] = {
        events,
        ratePerSecond: events / w.durationS,
        ...(finished === undefined ? {} : { processed: finished }),
        statements,
      };
      const total = statements.reduce((s, x) => s + x.usPerEvent, 0);
      console.log(
        `\n${key}: ${events} events stored in ${w.durationS.toFixed(1)} s (${Math.round(events / w.durationS)}/s)` +
          (finished === undefined ? '' : `, ${finished} finished`) +
          `; statements ${total.toFixed(1)} µs per event in all`,
      );
      table(
        statements.slice(0, top).map((s) => ({
          'µs/event': s.usPerEvent.toFixed(1),
          share: `${((100 * s.usPerEvent) / total).toFixed(0)}%`,
          calls: s.calls,
          'ms/call': s.msPerCall.toFixed(2),
          'rows/call': s.rowsPerCall.toFixed(0),
          'buffers/event': s.buffersPerEvent.toFixed(1),
          'WAL B/event': s.walBytesPerEvent.toFixed(0),
          statement: s.statement,
        })),
        ['µs/event', 'share', 'calls', 'ms/call', 'rows/call', 'buffers/event', 'WAL B/event', 'statement'],
      );
    } finally {
      await stop(child);
      await release();
    }
  }
  await admin.end();
  console.log(`\nwrote ${writeResult('statements', { seconds, results })}`);
} finally {
  cleanup();
}
