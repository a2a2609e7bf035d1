/**
 * CPU per stored event (`npx tsx bench/cpu.ts`, after `npm run build`): a measure
 * that moves less than rates on a shared machine. Each receiver takes wrk load
 * (64 connections) after a 2 s warm-up, and the CPU time its process and its
 * Postgres backends used, from /proc, and the write-ahead log Postgres wrote,
 * are divided by the rows it stored.
 * Knobs: CPU_RECEIVERS (comma-separated: gc_pk, gc_pk_hash, gc_inbox, gc_wide, gc_seen, ingress, serve; `ingress@/dir`
 * runs the build in another checkout, for before/after in one run (in CPU_SLICES mode each receiver's database
 * gets the migrations of its own build, so builds with different schemas compare too); `serve` is every role in one
 * process, the worker with the projection included, and counts what it stored, as ingress does, with
 * what it finished beside it (a change that slows the worker can raise the stored rate);
 * `ingress+--flag` adds Node options; `ingress~trace=0.01` exports traces over OTLP/HTTP to a sink this
 * process runs, sampling that ratio; `ingress-inbox_ordering_idx` runs it on an inbox without that index, more
 * joined by `-`, which is what the index costs ingest), CPU_SECONDS, CPU_RUNS, CPU_PROF_DIR (every
 * receiver's process writes a --cpu-prof profile there).
 *
 * CPU_SLICES=n is the A/B mode for a noisy machine: every receiver runs at once,
 * each on its own database, and the load alternates between them in slices of
 * CPU_SECONDS, n rounds. Noise that drifts over seconds or minutes (a neighbour,
 * the host's clock) then falls on every receiver alike, and each is reported
 * against the first as the median of its per-round ratios.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type pg from 'pg';
import { sampleRss, stop } from './lib/processes.js';
import { median } from './lib/receivers.js';
import { tableOf, type BenchDatabase, emptyStore, refuseDroppedIndexes, prepareDatabase, SECRET, startReceiver } from './lib/rigs.js';
import { startOtlpSink } from './lib/otlp-sink.js';
import { cachedRequests, requireWrk, runWrk } from './lib/wrk.js';

const TICK = 100; // clock ticks per second on Linux
/** Unique cached requests per second of a slice: above any receiver's rate here. */
const SLICE_RATE_LIMIT = 60_000;

/** The fields of a /proc stat file after the command name (which may hold spaces): utime is [11], stime [12], minflt [7]. */
function statFields(file: string): string[] {
  const stat = fs.readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU seconds per thread name (main thread, V8 workers, libuv pool), to see where a process's time goes. */
function threadSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = tid === String(pid) ? 'main' : fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const fields = statFields(`/proc/${pid}/task/${tid}/stat`);
      out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICK);
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** Where the cluster's write-ahead log ends now (every database's writes: the bench's slices load one receiver at a time). */
async function walPosition(admin: pg.Client): Promise<string> {
  return (await admin.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0]!.lsn;
}

/**
 * What the kernel did for a process: its system CPU seconds, minor page faults and context switches. Time
 * in the kernel and faults on fresh memory are CPU the process pays for that an instruction count of its own
 * code (bench/instructions.ts) does not see.
 */
function kernelCounts(pid: number): { sys: number; faults: number; switches: number } {
  try {
    const fields = statFields(`/proc/${pid}/stat`);
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const switches = [...status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    return { sys: Number(fields[12]) / TICK, faults: Number(fields[7]), switches };
  } catch {
    return { sys: 0, faults: 0, switches: 0 };
  }
}

function cpuSeconds(pid: number): number {
  try {
    const fields = statFields(`/proc/${pid}/stat`);
    return (Number(fields[11]) + Number(fields[12])) / TICK;
  } catch {
    return 0;
  }
}

const keys = (process.env.CPU_RECEIVERS ?? 'gc_pk,gc_inbox,ingress').split(',');
const seconds = Number(process.env.CPU_SECONDS ?? 8);
const runs = Number(process.env.CPU_RUNS ?? 3);
const slices = Number(process.env.CPU_SLICES ?? 0);
const profDir = process.env.CPU_PROF_DIR;
requireWrk();
const sink = keys.some((k) => k.includes('~trace=')) ? await startOtlpSink() : undefined;
if (sink) process.env.BENCH_OTLP_URL = sink.url;
try {
  if (slices > 0) await alternate();
  else await oneAtATime();
} finally {
  if (sink) console.log(`OTLP sink: ${sink.requests()} export requests, ${(sink.bytes() / 1e6).toFixed(1)} MB`);
  await sink?.close();
}

interface Measured {
  rate: number;
  /**
   * `serve` only: events finished per second of the slice. Its rate counts what it stored, and a change that
   * slows its worker lets ingest run faster while the backlog grows, so a rate is read with this beside it.
   */
  processed?: number;
  /** `serve` only: events stored and not finished when the slice ended. */
  backlog?: number;
  proc: number;
  pgus: number;
  /**
   * Write-ahead log per stored event: every row, index entry and commit a receiver makes Postgres write, as
   * bytes. It does not move with the machine's load as CPU time does, so it shows a change to what a flush
   * writes (an index fewer, a narrower row) that timing on a shared machine cannot. Each slice starts right
   * after a checkpoint, so each pays the same full-page images for the pages it touches first.
   */
  wal: number;
  p99: number;
  /** The receiver process's peak resident set during the slice, MiB. */
  rss: number;
}

/** A receiver on its own database, ready to take load. */
interface Rig {
  key: string;
  table: string;
  port: number;
  child: ChildProcess;
  database: BenchDatabase['database'];
  setup: BenchDatabase['setup'];
  admin: pg.Client;
  release: BenchDatabase['release'];
}

/** Loads one receiver for `seconds` and returns its CPU and Postgres time per stored row. */
async function measure(rig: Rig, file: string, fileRequests: number): Promise<{ m: Measured; threads: string; kernel: string }> {
  const dbName = new URL(rig.database.url).pathname.slice(1);
  await emptyStore(rig.setup, rig.key);
  const backends = (
    await rig.admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      [dbName],
    )
  ).rows.map((x) => x.pid);
  // Needs a superuser (the bench's local Postgres); without one, the slice starts wherever the last checkpoint left it.
  await rig.admin.query('CHECKPOINT').catch(() => undefined);
  const wal0 = await walPosition(rig.admin);
  const t0 = threadSeconds(rig.child.pid!);
  const c0 = cpuSeconds(rig.child.pid!);
  const k0 = kernelCounts(rig.child.pid!);
  const p0 = new Map(backends.map((p) => [p, cpuSeconds(p)]));
  const rss = sampleRss(rig.child.pid!);
  let rssMiB: number;
  let w: Awaited<ReturnType<typeof runWrk>>;
  try {
    w = await runWrk(`http://127.0.0.1:${rig.port}/webhooks`, file, { connections: 64, seconds });
  } finally {
    // Its timer would otherwise keep the bench alive after a failed load.
    rssMiB = rss.stop();
  }
  const c1 = cpuSeconds(rig.child.pid!);
  const k1 = kernelCounts(rig.child.pid!);
  const walBytes = Number(
    (await rig.admin.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1) AS d', [wal0])).rows[0]!.d,
  );
  // At once, in one snapshot: a worker that fell behind during the slice still shows its backlog here.
  const serve = rig.key.startsWith('serve');
  const counted = await rig.admin.query<{ n: string; finished: string | null }>(
    `SELECT count(*) AS n, ${serve ? `count(*) FILTER (WHERE status IN ('processed', 'skipped'))` : 'NULL'} AS finished
     FROM ${rig.setup.schema}.${rig.table}`,
  );
  const stored = Number(counted.rows[0]!.n);
  const finished = serve ? Number(counted.rows[0]!.finished) : undefined;
  // A pool may have opened connections during the load (idle ones close between slices): all their time is in it.
  const after = (
    await rig.admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      [dbName],
    )
  ).rows.map((x) => x.pid);
  // A backend that ended during the slice was an idle pool connection timing out (idle ones close between
  // slices): it counts for neither end, where its earlier time alone would have made the slice negative.
  let pgSeconds = 0;
  for (const pid of new Set([...backends, ...after])) {
    const end = cpuSeconds(pid);
    if (end > 0 || !p0.has(pid)) pgSeconds += end - (p0.get(pid) ?? 0);
  }
  const t1 = threadSeconds(rig.child.pid!);
  if (w.requests > 0.95 * fileRequests)
    console.warn(`${rig.key}: sent ${w.requests} of ${fileRequests} cached requests; raise the file size`);
  const threads = [...t1]
    .map(([name, s1]) => [name, ((s1 - (t0.get(name) ?? 0)) / stored) * 1e6] as const)
    .filter(([, us]) => us >= 0.5)
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `${name} ${us.toFixed(1)}`)
    .join(', ');
  const kernel =
    `${(((k1.sys - k0.sys) / stored) * 1e6).toFixed(1)} µs/event, ` +
    `${((k1.faults - k0.faults) / stored).toFixed(2)} minor faults/event, ` +
    `${((k1.switches - k0.switches) / stored).toFixed(3)} context switches/event`;
  return {
    m: {
      rate: stored / w.durationS,
      ...(finished === undefined ? {} : { processed: finished / w.durationS, backlog: stored - finished }),
      proc: ((c1 - c0) / stored) * 1e6,
      pgus: (pgSeconds / stored) * 1e6,
      wal: walBytes / stored,
      p99: w.p99Ms,
      rss: rssMiB,
    },
    threads,
    kernel,
  };
}

function medians(ms: readonly Measured[]): Measured {
  const processed = ms.flatMap((m) => (m.processed === undefined ? [] : [m.processed]));
  const backlog = ms.flatMap((m) => (m.backlog === undefined ? [] : [m.backlog]));
  return {
    rate: median(ms.map((m) => m.rate)),
    ...(processed.length > 0 ? { processed: median(processed), backlog: Math.round(median(backlog)) } : {}),
    proc: median(ms.map((m) => m.proc)),
    pgus: median(ms.map((m) => m.pgus)),
    wal: median(ms.map((m) => m.wal)),
    p99: median(ms.map((m) => m.p99)),
    rss: median(ms.map((m) => m.rss)),
  };
}

function line(key: string, label: string, m: Measured): string {
  const processed = m.processed === undefined ? '' : ` (processed ${Math.round(m.processed)}/s, backlog ${m.backlog ?? '?'})`;
  return `${key.padEnd(9)} ${label}: ${Math.round(m.rate)}/s${processed}  process ${m.proc.toFixed(1)} µs/event  postgres ${m.pgus.toFixed(1)} µs/event  WAL ${Math.round(m.wal)} B/event  p99 ${m.p99.toFixed(1)} ms  RSS ${Math.round(m.rss)} MiB`;
}

function load(): string {
  return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Every receiver up at once, load alternating between them; ratios are taken within each round. */
async function alternate(): Promise<void> {
  const rigs: Rig[] = [];
  // Enough for 60,000 requests/s, as in the other mode: at 25,000 the references run out of unique events on a
  // quiet machine (their rate would be the file's, not theirs). wrk reads the whole file before every slice.
  const reqs = cachedRequests(seconds * SLICE_RATE_LIMIT, SECRET);
  const basePort = 19_500 + Math.floor(Math.random() * 300);
  // Results are kept by key: the same receiver twice would pool two receivers' slices.
  const repeated = keys.find((k, i) => keys.indexOf(k) !== i);
  if (repeated)
    throw new Error(`CPU_RECEIVERS names ${repeated} twice; to compare a build with itself, give one copy a flag (ingress+--no-warnings)`);
  const orphans: Array<() => Promise<void>> = [];
  try {
    for (const [i, key] of keys.entries()) {
      const { database, setup, admin, refUrl, release } = await prepareDatabase(key);
      // Until its receiver is up and a rig holds it, the database is dropped from here.
      orphans.push(release);
      const port = basePort + i;
      const { table } = tableOf(key);
      const child = await startReceiver(key, port, database.url, refUrl, { profDir });
      rigs.push({ key, table, port, child, database, setup, admin, release });
      orphans.splice(orphans.indexOf(release), 1);
      await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds: 2 });
    }
    const all = new Map<string, Measured[]>(keys.map((k) => [k, []]));
    for (let r = 0; r < slices; r++) {
      // Each round starts with a different receiver, so none always follows the same one.
      const order = rigs.map((_, i) => rigs[(i + r) % rigs.length]!);
      for (const rig of order) {
        const { m, threads, kernel } = await measure(rig, reqs.file, seconds * SLICE_RATE_LIMIT);
        all.get(rig.key)!.push(m);
        console.log(
          `${line(rig.key, `slice ${r + 1}`, m)}  load ${load()}\n          threads (µs/event): ${threads}\n          kernel: ${kernel}`,
        );
      }
    }
    const first = all.get(keys[0]!)!;
    for (const [k, ms] of all) {
      const ratio = (f: (m: Measured) => number) => median(ms.map((m, i) => f(m) / f(first[i]!))).toFixed(3);
      console.log(
        `${line(k, 'median', medians(ms))}` +
          `  | vs ${keys[0]}: rate ${ratio((m) => m.rate)}x` +
          (ms[0]?.processed !== undefined && first[0]?.processed !== undefined ? `  processed ${ratio((m) => m.processed!)}x` : '') +
          `  process ${ratio((m) => m.proc)}x  postgres ${ratio((m) => m.pgus)}x  WAL ${ratio((m) => m.wal)}x`,
      );
    }
  } finally {
    for (const release of orphans) await release();
    for (const rig of rigs) {
      await stop(rig.child);
      await rig.release();
    }
  }
}

/** The original mode: one receiver at a time, each run fresh. */
async function oneAtATime(): Promise<void> {
  refuseDroppedIndexes(keys, 'run it with CPU_SLICES=n');
  const { database, setup, admin, refUrl, release } = await prepareDatabase();
  const port = 19_500 + Math.floor(Math.random() * 400);
  const reqs = cachedRequests(seconds * 60_000, SECRET);
  const results = new Map<string, Measured[]>(keys.map((k) => [k, []]));
  try {
    for (let r = 0; r < runs; r++) {
      for (const key of keys) {
        const { table } = tableOf(key);
        await emptyStore(setup, key);
        const child = await startReceiver(key, port, database.url, refUrl, { profDir });
        try {
          // Warm up (JIT, connections), then measure.
          await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds: 2 });
          const { m, threads, kernel } = await measure(
            { key, table, port, child, database, setup, admin, release },
            reqs.file,
            seconds * 60_000,
          );
          results.get(key)!.push(m);
          console.log(
            `${line(key, `run ${r + 1}`, m)}  load ${load()}\n          threads (µs/event): ${threads}\n          kernel: ${kernel}`,
          );
        } finally {
          await stop(child);
        }
      }
    }
  } finally {
    await release();
  }
  for (const [k, rs] of results) {
    console.log(line(k, 'median', medians(rs)));
  }
}
