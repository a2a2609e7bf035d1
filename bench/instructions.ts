/**
 * Instructions per stored event (`npx tsx bench/instructions.ts`, after `npm run build`; needs valgrind):
 * each receiver's process runs under valgrind's callgrind, takes a warm-up, and then a fixed count of
 * requests from 32 kept-alive connections. The instructions its threads ran during those requests are split
 * into the process's own work, the garbage collector and V8's compiler, and divided by the rows it stored.
 *
 * Why: rates and CPU seconds on a shared 2-core machine can move by a third from one 10 s slice to the next,
 * too much to see a change of a few per cent. The work count of one build repeats within about 3% on a quiet
 * day (the compiler's count does not: V8 still optimises at points that move from run to run, so it is shown
 * apart and left out of the first ratio); on a busy one it moved by 13% between two runs of one build (215,760
 * and 243,728 instructions per event), most likely because the flushes' sizes, and so the per-flush work each
 * event carries, follow how fast Postgres answers the slowed process, which the machine still moves: run it
 * twice, and trust a difference well outside their spread.
 *
 * What it does not see: the kernel (the socket writes, about a fifth of a receiver's CPU per event),
 * Postgres, and cache misses or stalls. It counts the process's own instructions, which is where postroom's
 * ingress differs most from the references (bench/cpu.ts). Under valgrind a process runs about fifty times
 * slower while Postgres does not, so its flushes hold about ten rows, not the thirty or so at full speed; every
 * receiver runs under the same conditions, and the ratios are what to read.
 *
 * Knobs: INS_RECEIVERS (default gc_pk,gc_inbox,ingress; `ingress@/other/checkout` runs another build, as
 * in bench/cpu.ts), INS_WARMUP (requests before counting, default 6,000), INS_EVENTS (counted requests,
 * default 6,000), INS_CONCURRENCY (default 32), INS_NODE_FLAGS (default --predictable: V8 then compiles
 * and collects on the main thread, at the same points for the same work), INS_KEEP (a folder to keep the
 * callgrind files in, for callgrind_annotate).
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readRequests, sendAll, type SignedRequest } from './lib/fixed-load.js';
import { stop } from './lib/processes.js';
import { prepareDatabase, SECRET, startReceiver, tableOf } from './lib/rigs.js';
import { cachedRequests } from './lib/wrk.js';

const keys = (process.env.INS_RECEIVERS ?? 'gc_pk,gc_inbox,ingress').split(',');
const warmup = Number(process.env.INS_WARMUP ?? 6_000);
const events = Number(process.env.INS_EVENTS ?? 6_000);
const concurrency = Number(process.env.INS_CONCURRENCY ?? 32);
const keep = process.env.INS_KEEP;
const nodeFlags = (process.env.INS_NODE_FLAGS ?? '--predictable').split(' ').filter((f) => f !== '');
const run = promisify(execFile);

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  throw new Error('bench/instructions.ts counts with valgrind: install it with `apt-get install -y valgrind`');
}

/** Where a process's instructions went: its steady work, the garbage collector, and V8 compiling code. */
interface Split {
  total: number;
  work: number;
  gc: number;
  compiler: number;
}

/**
 * V8 still optimises functions long after the warm-up, at points that move from run to run: the same build
 * showed 46,000 to 93,000 compiler instructions per event. The collector's share answers to
 * what a change keeps alive, so it is shown apart from the work it does per request.
 */
const COMPILER =
  /v8::internal::(compiler|maglev|baseline|interpreter|wasm)::|v8::internal::(Parser|Scanner|Compiler|PreParser|AstValueFactory)|OptimizedCompilationJob|Turbofan|Compile/;
const GC =
  /Scaveng|v8::internal::(Heap|MarkCompact|MinorMarkCompact|Sweeper|ConcurrentMarking|EvacuationAllocator|PretenuringHandler|SemiSpaceNewSpace|MarkingVisitor|MainMarkingVisitor|IncrementalMarking|LocalAllocator|ArrayBufferSweeper)|heap::base::|IterateAndScavenge|ScavengeVisitor|Evacuat|cppgc::/;

function splitOf(file: string): Split {
  const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const totals = /^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS/m.exec(text);
  if (!totals) throw new Error(`${file}: callgrind_annotate printed no program total`);
  const split: Split = { total: Number(totals[1]!.replaceAll(',', '')), work: 0, gc: 0, compiler: 0 };
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (!m || m[2]!.includes('PROGRAM TOTALS')) continue;
    const n = Number(m[1]!.replaceAll(',', ''));
    if (COMPILER.test(m[2]!)) split.compiler += n;
    else if (GC.test(m[2]!)) split.gc += n;
  }
  split.work = split.total - split.gc - split.compiler;
  return split;
}

/**
 * callgrind_control asks the running process through a file it reads only while it runs code: a receiver
 * asleep in epoll would leave it waiting, so requests from `trickle` (one every 20 ms, outside the count)
 * keep it awake until the answer comes. Each costs the count less than a request's share of a per mille.
 */
async function control(pid: number, flag: string, url: string, trickle: SignedRequest[]): Promise<void> {
  let answered = false;
  const asked = run('callgrind_control', [flag, String(pid)], { timeout: 300_000 }).finally(() => {
    answered = true;
  });
  while (!answered) {
    const r = trickle.shift();
    if (!r) throw new Error('bench/instructions.ts ran out of requests to keep the receiver awake');
    await sendAll(url, [r], 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await asked;
}

const dir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-instructions-'));
fs.mkdirSync(dir, { recursive: true });
const reqs = cachedRequests(600_000, SECRET);
const results: Array<{ key: string; split: Split; stored: number }> = [];
// Every receiver gets the same requests, in the same order: the warm-up's, then the counted ones.
const warm = await readRequests(reqs.file, 0, warmup);
const counted = await readRequests(reqs.file, warmup, events);
const TRICKLE = 3_000;
try {
  for (const [i, key] of keys.entries()) {
    const { database, setup, admin, refUrl, release } = await prepareDatabase(key);
    const port = 19_800 + i + Math.floor(Math.random() * 100);
    const name = key.replace(/[^A-Za-z0-9_=-]/g, '_');
    const out = path.join(dir, `${name}.callgrind`);
    // An INS_KEEP folder used before holds this receiver's earlier dumps: they must not be summed with this run's.
    for (const f of fs.readdirSync(dir)) if (f === `${name}.callgrind` || f.startsWith(`${name}.callgrind.`)) fs.rmSync(path.join(dir, f));
    try {
      const child = await startReceiver(key, port, database.url, refUrl, {
        wrap: ['valgrind', '-q', '--tool=callgrind', '--smc-check=all', '--instr-atstart=no', `--callgrind-out-file=${out}`],
        nodeFlags,
        readyMs: 600_000,
      });
      try {
        const url = `http://127.0.0.1:${port}/webhooks`;
        const trickle = await readRequests(reqs.file, warmup + events, TRICKLE);
        const w = await sendAll(url, warm, concurrency);
        if (w.failed > 0) throw new Error(`${key}: ${w.failed} warm-up requests failed`);
        const { table } = tableOf(key);
        const count = async (): Promise<number> =>
          Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${setup.schema}.${table}`)).rows[0]!.n);
        const commits = async (): Promise<number> =>
          Number(
            (await admin.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0]!
              .n,
          );
        const before = await count();
        const commitsBefore = await commits();
        await control(child.pid!, '--instr=on', url, trickle);
        const c = await sendAll(url, counted, concurrency);
        await control(child.pid!, '--instr=off', url, trickle);
        const stored = (await count()) - before;
        // Statistics reach pg_stat_database when a backend goes idle: read after the load, they hold every flush.
        await new Promise((r) => setTimeout(r, 1000));
        const flushes = (await commits()) - commitsBefore;
        if (c.failed > 0 || stored < events) throw new Error(`${key}: ${c.failed} requests failed, ${stored} of ${events} stored`);
        await control(child.pid!, '--dump', url, trickle);
        // Each `--dump` writes `<file>.<n>`; `<file>` itself is written at exit.
        const dumps = fs.readdirSync(dir).filter((f) => f.startsWith(`${name}.callgrind.`));
        const split = dumps
          .map((f) => splitOf(path.join(dir, f)))
          .reduce((a, b) => ({
            total: a.total + b.total,
            work: a.work + b.work,
            gc: a.gc + b.gc,
            compiler: a.compiler + b.compiler,
          }));
        results.push({ key, split, stored });
        const per = (n: number): string => Math.round(n / stored).toLocaleString('en');
        console.log(
          `${key.padEnd(9)} per stored event: work ${per(split.work)}, collector ${per(split.gc)}, compiler ${per(split.compiler)}, ` +
            `total ${per(split.total)} instructions (${stored} events, about ${(stored / Math.max(1, flushes)).toFixed(1)} per commit)`,
        );
      } finally {
        await stop(child);
      }
    } finally {
      await release();
    }
  }
  const first = results[0]!;
  const ratio = (r: (typeof results)[number], f: (s: Split) => number): string =>
    (f(r.split) / r.stored / (f(first.split) / first.stored)).toFixed(3);
  for (const r of results) {
    console.log(
      `${r.key.padEnd(9)} vs ${first.key}: work ${ratio(r, (s) => s.work)}x, work and collector ${ratio(r, (s) => s.work + s.gc)}x, ` +
        `total ${ratio(r, (s) => s.total)}x`,
    );
  }
} finally {
  if (!keep) fs.rmSync(dir, { recursive: true, force: true });
}
