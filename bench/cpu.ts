/**
 * CPU per stored event (`npx tsx bench/cpu.ts`, after `npm run build`): a measure
 * that moves less than rates on a shared machine. Each receiver takes wrk load
 * (64 connections) after a 2 s warm-up, and the CPU time its process and its
 * Postgres backends used, from /proc, is divided by the rows it stored.
 * Knobs: CPU_RECEIVERS (comma-separated: gc_pk, gc_inbox, ingress; `ingress@/dir`
 * runs the build in another checkout, for before/after in one run;
 * `ingress+--flag` adds Node options), CPU_SECONDS, CPU_RUNS, CPU_PROF_DIR (every
 * receiver's process writes a --cpu-prof profile there).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { silentLogger } from '../src/logging/logger.js';
import { benchDatabase } from './lib/pg.js';
import { stop } from './lib/processes.js';
import { median, ROOT } from './lib/receivers.js';
import { CACHED_TOLERANCE_SECONDS, cachedRequests, requireWrk, runWrk } from './lib/wrk.js';

const SECRET = 'whsec_bench_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';
const TICK = 100; // clock ticks per second on Linux

function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICK;
  } catch {
    return 0;
  }
}

async function startIngress(
  port: number,
  url: string,
  profDir: string | undefined,
  root: string,
  name: string,
  nodeOptions?: string,
): Promise<ChildProcess> {
  const nodeArgs = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}/${name}`] : [];
  const child = spawn(
    process.execPath,
    [...nodeArgs, path.join(root, 'bin/postroom.js'), 'serve', '--role', 'ingress', '--no-migrate', '--port', String(port)],
    {
      cwd: root,
      env: {
        ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        DATABASE_URL: url,
        POSTROOM_WEBHOOK_SECRETS: SECRET,
        POSTROOM_SIGNATURE_TOLERANCE_SECONDS: String(CACHED_TOLERANCE_SECONDS),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postroom exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return child;
    } catch {
      // not yet
    }
    if (Date.now() > until) throw new Error('postroom not healthy in 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startGroupCommit(port: number, url: string, table: string, profDir?: string): Promise<ChildProcess> {
  const nodeArgs = profDir
    ? ['--cpu-prof', `--cpu-prof-dir=${profDir}/gc_${table}`, '--import', "data:text/javascript,process.on('SIGTERM',()=>process.exit(0))"]
    : [];
  const child = spawn(
    process.execPath,
    [...nodeArgs, path.join(ROOT, 'bench/receivers/group-commit.mjs'), String(port), url, SECRET, table],
    {
      env: { ...process.env, POSTROOM_SIGNATURE_TOLERANCE_SECONDS: String(CACHED_TOLERANCE_SECONDS) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`group-commit.mjs exited with ${code} before it was ready`)));
  });
  return child;
}

/** `ingress`, `ingress@/other/root` (another build), `ingress+--v8-flag` (NODE_OPTIONS), or both. */
function startIngressKey(key: string, port: number, url: string, profDir: string | undefined): Promise<ChildProcess> {
  const [base, ...opts] = key.split('+');
  const at = base!.indexOf('@');
  const root = at === -1 ? ROOT : base!.slice(at + 1);
  return startIngress(port, url, profDir, root, key.replace(/[^A-Za-z0-9_=-]/g, '_'), opts.join(' ') || undefined);
}

const keys = (process.env.CPU_RECEIVERS ?? 'gc_pk,gc_inbox,ingress').split(',');
const seconds = Number(process.env.CPU_SECONDS ?? 8);
const runs = Number(process.env.CPU_RUNS ?? 3);
const profDir = process.env.CPU_PROF_DIR;
requireWrk();
const database = await benchDatabase();
const setup = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
await migrate(setup);
await setup.exec('CREATE TABLE ref_pk (event_id text PRIMARY KEY, body bytea NOT NULL)');
const refUrl = `${database.url}?options=${encodeURIComponent(`-c search_path=${setup.schema}`)}`;
const admin = new pg.Client({ connectionString: database.url });
await admin.connect();
const dbName = new URL(database.url).pathname.slice(1);
const port = 19_500 + Math.floor(Math.random() * 400);
const reqs = cachedRequests(seconds * 60_000, SECRET);
const results = new Map<string, Array<{ rate: number; proc: number; pgus: number; p99: number }>>(keys.map((k) => [k, []]));
try {
  for (let r = 0; r < runs; r++) {
    for (const key of keys) {
      const table = key === 'gc_pk' ? 'ref_pk' : 'inbox';
      await setup.exec(`TRUNCATE ${table}`);
      const child = key.startsWith('ingress')
        ? await startIngressKey(key, port, database.url, profDir)
        : await startGroupCommit(port, refUrl, key === 'gc_pk' ? 'pk' : 'inbox', profDir);
      try {
        // Warm up (JIT, connections), then measure.
        await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds: 2 });
        await setup.exec(`TRUNCATE ${table}`);
        const backends = (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
            [dbName],
          )
        ).rows.map((x) => x.pid);
        const ownPid = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const others = backends.filter((p) => p !== ownPid);
        const c0 = cpuSeconds(child.pid!);
        const p0 = others.reduce((a, p) => a + cpuSeconds(p), 0);
        const w = await runWrk(`http://127.0.0.1:${port}/webhooks`, reqs.file, { connections: 64, seconds });
        const c1 = cpuSeconds(child.pid!);
        const p1 = others.reduce((a, p) => a + cpuSeconds(p), 0);
        const stored = Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${setup.schema}.${table}`)).rows[0]!.n);
        results.get(key)!.push({
          rate: stored / w.durationS,
          proc: ((c1 - c0) / stored) * 1e6,
          pgus: ((p1 - p0) / stored) * 1e6,
          p99: w.p99Ms,
        });
        const last = results.get(key)!.at(-1)!;
        console.log(
          `${key.padEnd(9)} run ${r + 1}: ${Math.round(last.rate)}/s  process ${last.proc.toFixed(1)} µs/event  postgres ${last.pgus.toFixed(1)} µs/event  p99 ${last.p99.toFixed(1)} ms  load ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
        );
      } finally {
        await stop(child);
      }
    }
  }
} finally {
  await admin.end();
  await setup.close();
  await database.drop();
}
for (const [k, rs] of results) {
  console.log(
    `${k.padEnd(9)} median: ${Math.round(median(rs.map((x) => x.rate)))}/s  process ${median(rs.map((x) => x.proc)).toFixed(1)} µs/event  postgres ${median(rs.map((x) => x.pgus)).toFixed(1)} µs/event  p99 ${median(rs.map((x) => x.p99)).toFixed(1)} ms`,
  );
}
