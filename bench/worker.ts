/**
 * Worker: drain 50,000 received events with a no-op handler (projection on),
 * and the same count of no-op jobs through the current graphile-worker, in the
 * same run. Both run under the same Node (24: graphile-worker 0.18 needs
 * >= 22.18), each in its own process; this process only prepares the databases.
 * With BENCH_WORKER_BUILDS, postroom's drain only, build against build (compareWorkerBuilds).
 * BENCH_WORKER_PROF_DIR: every side's process writes a CPU profile there (--cpu-prof).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { insertInboxBatch } from '../src/inbox/insert-queries.js';
import type { NewInboxEvent } from '../src/inbox/types.js';
import { silentLogger } from '../src/logging/logger.js';
import { benchDatabase } from './lib/pg.js';
import { benchNode } from './lib/node.js';
import { sampleRss } from './lib/processes.js';
import { median, ROOT } from './lib/receivers.js';
import { BENCH_DIR, table, writeResult } from './lib/report.js';

const ACTS = ['delivered', 'read', 'approved', 'signed'];
const GRAPHILE_DIR = path.join(BENCH_DIR, 'graphile-worker');

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

/** graphile-worker lives in its own package (bench/graphile-worker), installed on first use or when its pin moves. */
function ensureGraphileWorker(): void {
  const lock = JSON.parse(fs.readFileSync(path.join(GRAPHILE_DIR, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  const wanted = lock.packages['node_modules/graphile-worker']?.version;
  const installed = path.join(GRAPHILE_DIR, 'node_modules/graphile-worker/package.json');
  if (fs.existsSync(installed) && (JSON.parse(fs.readFileSync(installed, 'utf8')) as { version: string }).version === wanted) return;
  console.log(`installing graphile-worker ${wanted} (npm ci --prefix bench/graphile-worker)`);
  execFileSync('npm', ['ci', '--prefix', GRAPHILE_DIR, '--silent', '--no-audit', '--no-fund'], { stdio: 'inherit' });
}

/** Runs one side in its own process; returns its JSON line and the process's peak RSS. */
async function runSide(
  node: string,
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ result: Record<string, unknown>; rssMiB: number }> {
  const prof = process.env.BENCH_WORKER_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_WORKER_PROF_DIR] : [];
  const child = spawn(node, [...prof, script, ...args], {
    cwd: path.dirname(BENCH_DIR),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rss = sampleRss(child.pid!);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve));
  const rssMiB = rss.stop();
  if (code !== 0) throw new Error(`${path.relative(BENCH_DIR, script)} exited with ${code}`);
  return { result: JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>, rssMiB };
}

interface Drain {
  seconds: number;
  rssMiB: number;
  cpu: { process: number; postgres: number };
  participants: number;
  node: string;
  /** The share of each projection table's updates that were HOT (stayed on their page). */
  hot: Record<string, number | null>;
}

/**
 * postroom's side: the worker as `serve` runs it, with the projection, a no-op user handler, from the
 * build in `root` (its own migrations and compiled package). `history` finished events first, then the
 * statistics autovacuum would take in that quiet moment, then the backlog arrives. Autovacuum is off for
 * the drain: on a large inbox its next ANALYZE comes only after a tenth of the table has changed (a
 * million rows at ten million), so a burst is drained on the quiet moment's statistics.
 */
async function drainBuild(o: {
  root: string;
  node: string;
  n: number;
  correspondences: number;
  concurrency: number;
  history: number;
}): Promise<Drain> {
  const { n, history } = o;
  const database = await benchDatabase();
  try {
    const setup = createPgDb({ url: database.url, poolSize: 2, logger: silentLogger() });
    await migrate(setup, { dir: path.join(o.root, 'migrations') });
    if (history > 0) {
      // A build with a partitioned inbox (migrations/024) needs yesterday's partition for the history.
      await setup.query(
        `SELECT inbox_partition_create((now() AT TIME ZONE 'UTC')::date - 1) WHERE to_regprocedure('inbox_partition_create(date)') IS NOT NULL`,
      );
      await setup.query(
        `INSERT INTO inbox (event_id, type, occurred_at, received_at, status, processed_at, correspondence_id)
         SELECT 'evt_history_' || g, 'participant.acted', now() - interval '1 day', now() - interval '1 day', 'processed', now(), 'cor_h' || (g % 5000)
         FROM generate_series(1, $1::int) g`,
        [history],
      );
      await setup.exec('SELECT inbox_tally_rebuild()');
      await setup.exec('VACUUM ANALYZE inbox');
      // On each partition where the inbox is partitioned (the parent has no storage to set it on).
      const tables = await setup.query<{ name: string }>(
        `SELECT coalesce((SELECT string_agg(format('%I', c.relname), ',') FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                          WHERE i.inhparent = to_regclass('inbox')), 'inbox') AS name`,
      );
      for (const name of tables.rows[0]!.name.split(',')) await setup.exec(`ALTER TABLE ${name} SET (autovacuum_enabled = false)`);
    }
    for (let i = 0; i < n; i += 1000)
      await insertInboxBatch(
        setup,
        Array.from({ length: Math.min(1000, n - i) }, (_, k) => event(i + k, o.correspondences)),
      );
    if (history === 0) await setup.exec('VACUUM ANALYZE inbox');
    await setup.close();
    const { result, rssMiB } = await runSide(
      o.node,
      path.join(BENCH_DIR, 'workers/postroom.mjs'),
      [database.url, String(n), String(o.concurrency), String(history + n)],
      o.root === ROOT ? {} : { BENCH_POSTROOM_BUILD: o.root },
    );
    return {
      seconds: result.seconds as number,
      rssMiB,
      cpu: { process: result.process_us as number, postgres: result.postgres_us as number },
      participants: result.participants as number,
      node: result.node as string,
      hot: result.hot_updates as Record<string, number | null>,
    };
  } finally {
    await database.drop();
  }
}

export async function benchWorker(
  options: { events?: number; correspondences?: number; concurrency?: number; node?: string; burstHistory?: number } = {},
): Promise<Record<string, unknown>> {
  const n = options.events ?? 50_000;
  const correspondences = options.correspondences ?? 5_000;
  const concurrency = options.concurrency ?? 4;
  const node = benchNode(options.node);
  ensureGraphileWorker();
  const rows: Array<Record<string, string | number>> = [];
  /** CPU per event (process, then its Postgres backends) is measured on postroom's side only. */
  const row = (worker: string, seconds: number, rssMiB: number, cpu?: { process: number; postgres: number }): void => {
    rows.push({
      worker,
      events: n,
      seconds,
      'events/s': Math.round(n / seconds),
      'process µs/event': cpu?.process ?? '',
      'Postgres µs/event': cpu?.postgres ?? '',
      'RSS MiB': Math.round(rssMiB),
    });
  };

  // postroom: the worker as `serve` runs it, with the projection, a no-op user handler.
  const drainPostroom = (history: number): Promise<Drain> => drainBuild({ root: ROOT, node, n, correspondences, concurrency, history });
  const fresh = await drainPostroom(0);
  const participants = fresh.participants;
  const nodeVersion = fresh.node;
  row(
    `postroom (projection on, ${concurrency} loops, batches ${process.env.BENCH_WORKER_BATCH_SIZE ? `of at most ${process.env.BENCH_WORKER_BATCH_SIZE}` : '100 growing to 500'})`,
    fresh.seconds,
    fresh.rssMiB,
    fresh.cpu,
  );

  // graphile-worker: the job queue a user would reach for, same count of no-op jobs, same concurrency;
  // at its defaults, then with its batching on. Each run gets a fresh database.
  let graphileVersion = '';
  for (const mode of ['defaults', 'batched'] as const) {
    const db = await benchDatabase();
    try {
      const { result, rssMiB } = await runSide(node, path.join(GRAPHILE_DIR, 'drain.mjs'), [db.url, String(n), String(concurrency), mode]);
      graphileVersion = result.graphile_worker as string;
      const how = mode === 'defaults' ? 'defaults' : 'batched: local queue 100, completions batched';
      row(`graphile-worker ${graphileVersion} (no-op task, concurrency ${concurrency}, ${how})`, result.seconds as number, rssMiB);
    } finally {
      await db.drop();
    }
  }

  const history = options.burstHistory ?? 200_000;
  if (history > 0) {
    const burst = await drainPostroom(history);
    row(
      `postroom after a burst (${history.toLocaleString('en-US')} finished rows, statistics from before the burst)`,
      burst.seconds,
      burst.rssMiB,
      burst.cpu,
    );
  }

  const rate = (i: number): number => rows[i]!['events/s'] as number;
  const ratios: Record<string, number> = {
    'postroom / graphile-worker': rate(0) / rate(1),
    'postroom / graphile-worker batched': rate(0) / rate(2),
  };
  if (rows[3]) ratios['postroom after a burst / postroom'] = rate(3) / rate(0);
  console.log(
    `\nWorker: drain ${n.toLocaleString('en-US')} received events over ${correspondences.toLocaleString('en-US')} correspondences (postroom projected ${participants} participants)`,
  );
  console.log(
    `both sides on Node ${nodeVersion} (${node}), graphile-worker ${graphileVersion}; each in its own process (RSS is that process's)`,
  );
  table(rows, ['worker', 'events', 'seconds', 'events/s', 'process µs/event', 'Postgres µs/event', 'RSS MiB']);
  for (const [name, value] of Object.entries(ratios)) console.log(`${name.padEnd(40)} ${value.toFixed(2)}x`);
  return { events: n, correspondences, concurrency, node: nodeVersion, graphile_worker: graphileVersion, rows, ratios };
}

/**
 * Before and after, on a machine whose speed drifts: postroom's drain alone (no graphile-worker), from
 * each build in turn, `rounds` times, each round in a fresh order of the builds. A build is a checkout
 * with `npm run build` done (`git worktree add /tmp/base HEAD~1`, `npm run build` there, node_modules
 * linked): its own migrations and compiled package drain the same backlog, seeded through this
 * checkout's insert (so the two inbox tables must take the same columns), and run by the same harness
 * (bench/workers/postroom.mjs, which imports the other build's package). Reports each build against
 * this one as the median of the per-round ratios.
 */
export async function compareWorkerBuilds(options: {
  others: string[];
  rounds: number;
  events: number;
  node?: string;
}): Promise<Record<string, unknown>> {
  const node = benchNode(options.node);
  const builds = [ROOT, ...options.others.map((o) => path.resolve(o))];
  const runs = new Map<string, Drain[]>(builds.map((b) => [b, []]));
  for (let round = 0; round < options.rounds; round++) {
    // Alternate which build goes first, so a drift within a round falls on each alike.
    const order = round % 2 === 0 ? [...builds].reverse() : builds;
    for (const root of order) {
      const d = await drainBuild({ root, node, n: options.events, correspondences: 5_000, concurrency: 4, history: 0 });
      runs.get(root)!.push(d);
      console.log(
        `round ${round + 1} ${path.relative(process.cwd(), root) || '.'}: ${Math.round(options.events / d.seconds)} events/s, ` +
          `process ${d.cpu.process} µs, Postgres ${d.cpu.postgres} µs per event; HOT updates ${JSON.stringify(d.hot)}`,
      );
    }
  }
  const mine = runs.get(ROOT)!;
  const rows = builds.map((root) => {
    const r = runs.get(root)!;
    const ratio = (f: (d: Drain, i: number) => number): string => median(r.map(f)).toFixed(3);
    return {
      build: root === ROOT ? '. (this checkout)' : root,
      'events/s (median)': Math.round(median(r.map((d) => options.events / d.seconds))),
      'rate vs this': ratio((d, i) => mine[i]!.seconds / d.seconds),
      'process µs vs this': ratio((d, i) => d.cpu.process / mine[i]!.cpu.process),
      'Postgres µs vs this': ratio((d, i) => d.cpu.postgres / mine[i]!.cpu.postgres),
      'HOT updates (correspondence / participant)': `${median(r.map((d) => d.hot.correspondence ?? 0))} / ${median(r.map((d) => d.hot.participant ?? 0))}`,
    };
  });
  console.log(`\nWorker builds: ${options.events.toLocaleString('en-US')} events, ${options.rounds} rounds, on Node ${mine[0]?.node}`);
  table(rows, [
    'build',
    'events/s (median)',
    'rate vs this',
    'process µs vs this',
    'Postgres µs vs this',
    'HOT updates (correspondence / participant)',
  ]);
  return { events: options.events, rounds: options.rounds, node: mine[0]?.node, rows, runs: Object.fromEntries(runs) };
}

/** BENCH_EVENTS (default 50,000) and BENCH_BURST_HISTORY (finished rows before the burst run, default 200,000; 0 skips it). */
export function workerOptionsFromEnv(): { events: number; burstHistory: number } {
  return { events: Number(process.env.BENCH_EVENTS ?? 50_000), burstHistory: Number(process.env.BENCH_BURST_HISTORY ?? 200_000) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // BENCH_WORKER_BUILDS: other checkouts, comma-separated, for before/after (compareWorkerBuilds); BENCH_WORKER_ROUNDS (5).
  const others = process.env.BENCH_WORKER_BUILDS?.split(',').filter(Boolean);
  if (others?.length) {
    const result = await compareWorkerBuilds({
      others,
      rounds: Number(process.env.BENCH_WORKER_ROUNDS ?? 5),
      events: workerOptionsFromEnv().events,
    });
    console.log(`\nwrote ${writeResult('worker-builds', result)}`);
  } else {
    const result = await benchWorker(workerOptionsFromEnv());
    console.log(`\nwrote ${writeResult('worker', result)}`);
  }
}
