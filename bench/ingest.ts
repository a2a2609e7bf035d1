/**
 * Ingest: correctly signed unique events at 64 connections (wrk, 1 thread), each
 * receiver in its own process, three interleaved runs per receiver, medians
 * reported. Every receiver, reference or postroom, takes the same warm-up load
 * (2 s by default) before its measured run: a daemon is measured as it runs in
 * production, warm, and a cold start (JIT, the pool's first connections) costs
 * postroom, with far more code to compile, more than the references.
 * postroom is measured against the true limits on this machine, in the same
 * run: the verify-only ceiling and a minimal group commit, both plain Node on
 * node:http (bench/receivers/*.mjs). Then `postroom serve` with every role for
 * 60 s: does processing keep up with ingest, with the projection on, and how
 * many events does each of the worker's batches carry (from serve's /metrics)?
 */
import pg from 'pg';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { inboxStatusCounts } from '../src/inbox/read-queries.js';
import { silentLogger } from '../src/logging/logger.js';
import { benchDatabase } from './lib/pg.js';
import { sampleRss, stop } from './lib/processes.js';
import { eventsPerBatch } from './lib/metrics.js';
import { median, startPostroom, startReference } from './lib/receivers.js';
import { table, writeResult } from './lib/report.js';
import { CACHED_TOLERANCE_SECONDS, cachedRequests, requireWrk, runWrk } from './lib/wrk.js';

const SECRET = 'whsec_bench_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';

interface Variant {
  name: string;
  key: 'ceiling' | 'naive' | 'gc_pk' | 'gc_pk_hash' | 'gc_inbox' | 'ingress';
  table?: string;
  start(port: number, url: string): ReturnType<typeof startReference>;
}

interface Run {
  accepted: number;
  reqs: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
  rss: number;
}

async function count(url: string, sql: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query<{ n: string }>(sql)).rows[0]!.n);
  } finally {
    await c.end();
  }
}

// The request files are signed once and reused for a day (cachedRequests): every receiver gets the same window.
const tolerance = { POSTROOM_SIGNATURE_TOLERANCE_SECONDS: String(CACHED_TOLERANCE_SECONDS) };
const postroomEnv = (url: string): Record<string, string> => ({ DATABASE_URL: url, POSTROOM_WEBHOOK_SECRETS: SECRET, ...tolerance });

export type ReceiverKey = Variant['key'];
/** `npm run bench -- ingress`: postroom's ingress against the group-commit references only, no 60 s serve. */
export const INGRESS_COMPARISON: readonly ReceiverKey[] = ['gc_pk', 'gc_pk_hash', 'gc_inbox', 'ingress'];

export async function benchIngest(
  options: {
    seconds?: number;
    /** Load before each measured run, the table emptied after it; 0 measures from a cold start. */
    warmupSeconds?: number;
    connections?: number;
    runs?: number;
    sustainSeconds?: number;
    sustainRuns?: number;
    receivers?: readonly ReceiverKey[];
  } = {},
): Promise<Record<string, unknown>> {
  requireWrk();
  const seconds = options.seconds ?? 10;
  const warmupSeconds = options.warmupSeconds ?? 2;
  const connections = options.connections ?? 64;
  const runs = options.runs ?? 3;
  // 0 skips the run of `serve` with every role.
  const sustainSeconds = options.sustainSeconds ?? 60;
  const sustainRuns = options.sustainRuns ?? 1;
  const database = await benchDatabase();
  const setup = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
  await migrate(setup);
  await setup.exec(
    `CREATE TABLE ref_pk (event_id text PRIMARY KEY, body bytea NOT NULL);
     CREATE TABLE ref_pk_hash (event_id text NOT NULL, body bytea NOT NULL, EXCLUDE USING hash (event_id WITH =));
     CREATE TABLE ref_naive (event_id text PRIMARY KEY, body bytea NOT NULL)`,
  );
  // The reference receivers and the counts use plain connections: point them at postroom's schema, where the tables are.
  const refUrl = `${database.url}${database.url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${setup.schema}`)}`;
  const port = 18_500 + Math.floor(Math.random() * 1000);
  const hook = `http://127.0.0.1:${port}/webhooks`;
  const allVariants: Variant[] = [
    {
      name: 'verify + parse, store nothing (ceiling)',
      key: 'ceiling',
      start: (p, u) => startReference('ceiling.mjs', [String(p), u, SECRET], tolerance),
    },
    {
      name: 'naive: INSERT per request, pg.Pool 16',
      key: 'naive',
      table: 'ref_naive',
      start: (p, u) => startReference('naive.mjs', [String(p), u, SECRET], tolerance),
    },
    {
      name: 'minimal group commit, primary-key-only table',
      key: 'gc_pk',
      table: 'ref_pk',
      start: (p, u) => startReference('group-commit.mjs', [String(p), u, SECRET, 'pk'], tolerance),
    },
    {
      name: 'minimal group commit, id unique through a hash index',
      key: 'gc_pk_hash',
      table: 'ref_pk_hash',
      start: (p, u) => startReference('group-commit.mjs', [String(p), u, SECRET, 'pk_hash'], tolerance),
    },
    {
      name: "minimal group commit into postroom's inbox table",
      key: 'gc_inbox',
      table: 'inbox',
      start: (p, u) => startReference('group-commit.mjs', [String(p), u, SECRET, 'inbox'], tolerance),
    },
    { name: 'postroom serve --role ingress', key: 'ingress', table: 'inbox', start: (p, u) => startPostroom('ingress', p, postroomEnv(u)) },
  ];
  const variants = allVariants.filter((v) => !options.receivers || options.receivers.includes(v.key));
  const results = new Map<string, Run[]>(variants.map((v) => [v.key, []]));
  // More than any receiver here answers in the time (wrk starts over at the end, and repeats are not counted).
  const reqs = cachedRequests(seconds * 60_000, SECRET);
  const sustainPairs: Array<Record<string, number>> = [];
  try {
    // Interleaved, so a noisy minute on this shared machine hurts every receiver alike.
    for (let r = 0; r < runs; r++) {
      for (const v of variants) {
        const child = await v.start(port, v.key === 'ingress' ? database.url : refUrl);
        // From the start, warm-up included: the memory target holds for the whole life of the process.
        const rss = sampleRss(child.pid!);
        try {
          if (warmupSeconds > 0) await runWrk(hook, reqs.file, { connections, seconds: warmupSeconds });
          // Every run replays the same events: each starts from an empty table (and, for the inbox, an empty id
          // ledger), so its rows are all new.
          if (v.table) await setup.exec(`TRUNCATE ${v.table === 'inbox' ? 'inbox, inbox_ids' : v.table}`);
          const countSql = `SELECT count(*) AS n FROM ${v.table}`;
          const before = v.table ? await count(refUrl, countSql) : 0;
          const w = await runWrk(hook, reqs.file, { connections, seconds });
          const stored = v.table ? (await count(refUrl, countSql)) - before : w.requests - w.non2xx;
          results.get(v.key)!.push({
            accepted: stored / w.durationS,
            reqs: w.requests / w.durationS,
            p50: w.p50Ms,
            p99: w.p99Ms,
            max: w.maxMs,
            errors: w.non2xx + w.socketErrors + w.timeouts,
            rss: rss.stop(),
          });
        } finally {
          rss.stop();
          await stop(child);
        }
      }
    }

    /**
     * `serve` with every role for sustainSeconds, from an empty inbox: its ingest rate and whether the worker
     * keeps up. Each run is paired with `serve --role ingress` for as long just before it, so the ratio
     * compares two runs a minute apart rather than one against the medians of a few minutes before.
     */
    const sustainedRun = async (role: 'ingress' | 'all', reqsFile: string): Promise<Record<string, number>> => {
      await setup.exec('TRUNCATE inbox, inbox_ids');
      const child = await startPostroom(role, port, postroomEnv(database.url));
      const rss = sampleRss(child.pid!);
      const backlog = async (): Promise<{ backlog: number; finished: number }> => {
        const c = await inboxStatusCounts(setup);
        const b = (c.by_status.received ?? 0) + (c.by_status.processing ?? 0) + (c.by_status.failed ?? 0);
        return { backlog: b, finished: (c.by_status.processed ?? 0) + (c.by_status.skipped ?? 0) };
      };
      try {
        const start = await backlog();
        let maxBacklog = 0;
        const sampler = setInterval(() => {
          void backlog().then((b) => (maxBacklog = Math.max(maxBacklog, b.backlog)));
        }, 2000);
        const w = await runWrk(hook, reqsFile, { connections, seconds: sustainSeconds });
        clearInterval(sampler);
        const end = await backlog();
        const perBatch: Record<string, number> = role === 'all' ? { 'events/batch': Math.round(await eventsPerBatch(port)) } : {};
        return {
          'req/s': Math.round(w.requests / w.durationS),
          'processed/s': Math.round((end.finished - start.finished) / w.durationS),
          'p50 ms': w.p50Ms,
          'p99 ms': w.p99Ms,
          'backlog max': maxBacklog,
          'backlog at end': end.backlog,
          'non-2xx': w.non2xx + w.socketErrors + w.timeouts,
          'RSS MiB': Math.round(rss.stop()),
          ...perBatch,
        };
      } finally {
        rss.stop();
        await stop(child);
      }
    };
    const sustainReqs = sustainSeconds > 0 ? cachedRequests(Math.min(sustainSeconds * 25_000, 2_000_000), SECRET) : undefined;
    for (let r = 0; sustainReqs && r < sustainRuns; r++) {
      const alone = await sustainedRun('ingress', sustainReqs.file);
      const all = await sustainedRun('all', sustainReqs.file);
      sustainPairs.push({ run: r + 1, 'ingress req/s': alone['req/s']!, ...all, 'serve / ingress': all['req/s']! / alone['req/s']! });
    }
  } finally {
    await setup.close();
    await database.drop();
  }

  const rows = variants.map((v) => {
    const rs = results.get(v.key)!;
    return {
      receiver: v.name,
      key: v.key,
      'accepted/s': Math.round(median(rs.map((x) => x.accepted))),
      'req/s': Math.round(median(rs.map((x) => x.reqs))),
      'p50 ms': median(rs.map((x) => x.p50)),
      'p99 ms': median(rs.map((x) => x.p99)),
      'max ms': Math.max(...rs.map((x) => x.max)),
      'non-2xx': rs.reduce((a, x) => a + x.errors, 0),
      'RSS MiB': Math.round(Math.max(...rs.map((x) => x.rss))),
      'req/s runs': rs.map((x) => Math.round(x.reqs)).join(' / '),
      'p99 runs': rs.map((x) => x.p99.toFixed(1)).join(' / '),
    };
  });
  const get = (k: Variant['key']): number => rows.find((r) => r.key === k)?.['accepted/s'] ?? Number.NaN;
  const ratios: Record<string, number> = {
    'ingress / minimal group commit (pk only)': get('ingress') / get('gc_pk'),
    'ingress / minimal group commit (hash-unique id)': get('ingress') / get('gc_pk_hash'),
    'ingress / group commit into inbox': get('ingress') / get('gc_inbox'),
    'ingress / naive': get('ingress') / get('naive'),
    'ingress / verify-only ceiling': get('ingress') / get('ceiling'),
  };
  const sustain =
    sustainPairs.length > 0
      ? {
          seconds: sustainSeconds,
          runs: sustainPairs,
          'serve / ingress (median of the pairs)': median(sustainPairs.map((p) => p['serve / ingress']!)),
        }
      : undefined;
  if (sustain) {
    ratios['serve (all roles) / ingress, paired (median)'] = sustain['serve / ingress (median of the pairs)'];
    ratios['serve (all roles) / ingress'] = median(sustainPairs.map((p) => p['req/s']!)) / get('ingress');
  }
  for (const [k, v] of Object.entries(ratios)) if (Number.isNaN(v)) delete ratios[k];
  console.log(
    `\nIngest: ${connections} connections, ${seconds} s per run after ${warmupSeconds} s of warm-up, ${runs} interleaved runs per receiver (medians), unique signed events`,
  );
  table(rows, ['receiver', 'accepted/s', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx', 'RSS MiB', 'req/s runs', 'p99 runs']);
  if (sustain) {
    console.log(
      `\npostroom serve (ingress, worker with the projection, reconciler off) for ${sustainSeconds} s, each run just after serve --role ingress for as long`,
    );
    table(
      sustainPairs.map((p) => ({ ...p, 'serve / ingress': p['serve / ingress']!.toFixed(2) })),
      Object.keys(sustainPairs[0]!),
    );
  }
  for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(44)} ${v.toFixed(2)}x`);
  return { seconds, warmupSeconds, connections, runs, rows, sustain, ratios };
}

/**
 * The bench's knobs: BENCH_SECONDS, BENCH_RUNS, BENCH_SUSTAIN_SECONDS (0 skips serve), BENCH_SUSTAIN_RUNS (pairs
 * of ingress-only and all-roles runs, default 1), BENCH_RECEIVERS (comma-separated keys).
 */
export function ingestOptionsFromEnv(
  defaults: { receivers?: readonly ReceiverKey[]; sustainSeconds?: number } = {},
): Parameters<typeof benchIngest>[0] {
  const receivers = process.env.BENCH_RECEIVERS ? (process.env.BENCH_RECEIVERS.split(',') as ReceiverKey[]) : defaults.receivers;
  return {
    seconds: Number(process.env.BENCH_SECONDS ?? 10),
    warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 2),
    runs: Number(process.env.BENCH_RUNS ?? 3),
    sustainSeconds: Number(process.env.BENCH_SUSTAIN_SECONDS ?? defaults.sustainSeconds ?? 60),
    sustainRuns: Number(process.env.BENCH_SUSTAIN_RUNS ?? 1),
    ...(receivers ? { receivers } : {}),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchIngest(ingestOptionsFromEnv());
  console.log(`\nwrote ${writeResult('ingest', result)}`);
}
