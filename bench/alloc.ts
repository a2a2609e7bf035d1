/**
 * Bytes allocated per stored event, and by which functions (`npx tsx bench/alloc.ts`, after `npm run build`).
 *
 * Each receiver runs with V8's sampling heap profiler (bench/lib/alloc-sampler.mjs), which here keeps the samples
 * of objects already collected: what a request allocates and drops is work for the young generation's collector and
 * the allocator, and the default profile would show only what is still alive. After a warm-up on requests of their
 * own, the receiver takes ALLOC_SECONDS of wrk load (64 connections); the profile of that window is divided by the
 * rows stored in it. A count of bytes moves far less with the machine's load than CPU time does, so it shows a change
 * to what a request allocates where bench/cpu.ts's slices cannot. The profile samples
 * one allocation in about every 4 kB: functions that allocate less than ~50 B per event are noise.
 *
 * Knobs: ALLOC_RECEIVERS (default gc_inbox,ingress; `ingress@/other/checkout` as in bench/cpu.ts), ALLOC_SECONDS
 * (default 8), ALLOC_TOP (functions listed, default 25), ALLOC_KEEP (a folder to keep the profiles in; open them in
 * Chrome DevTools' Memory tab).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { stop } from './lib/processes.js';
import { tableOf, emptyStore, refuseDroppedIndexes, prepareDatabase, SECRET, startReceiver } from './lib/rigs.js';
import { cachedRequests, requireWrk, runWrk } from './lib/wrk.js';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const keys = (process.env.ALLOC_RECEIVERS ?? 'gc_inbox,ingress').split(',');
const seconds = Number(process.env.ALLOC_SECONDS ?? 8);
const top = Number(process.env.ALLOC_TOP ?? 25);
const keep = process.env.ALLOC_KEEP;
const SAMPLER = path.join(import.meta.dirname, 'lib/alloc-sampler.mjs');

const nameOf = (n: ProfileNode): string => {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url === '' ? '' : ` ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
  return `${functionName || '(anonymous)'}${file}`;
};

/** Bytes by function: allocated in it (self), and in it or anything it called (inclusive, each function once per stack). */
function summarise(root: ProfileNode): { total: number; self: Map<string, number>; inclusive: Map<string, number> } {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode, above: readonly string[]): void => {
    const name = nameOf(n);
    const names = above.includes(name) ? above : [...above, name];
    total += n.selfSize;
    self.set(name, (self.get(name) ?? 0) + n.selfSize);
    for (const k of names) inclusive.set(k, (inclusive.get(k) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c, names);
  };
  walk(root, []);
  return { total, self, inclusive };
}

const signal = (pid: number | undefined): void => {
  if (pid !== undefined) process.kill(pid, 'SIGUSR2');
};

requireWrk();
refuseDroppedIndexes(keys, 'measure it with bench/cpu.ts and CPU_SLICES=n');
const { database, setup, refUrl, release } = await prepareDatabase();
const warm = cachedRequests(120_001, SECRET);
const load = cachedRequests(seconds * 60_000, SECRET);
const dir = keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-alloc-'));
fs.mkdirSync(dir, { recursive: true });
const port = 19_500 + Math.floor(Math.random() * 400);
const totals: Array<[string, number]> = [];
try {
  for (const key of keys) {
    const { table } = tableOf(key);
    await emptyStore(setup, key);
    const out = path.join(dir, `${key.replace(/[^A-Za-z0-9_-]/g, '_')}.heapprofile`);
    fs.rmSync(out, { force: true });
    const sampler = `${pathToFileURL(SAMPLER).href}?out=${encodeURIComponent(out)}`;
    const child = await startReceiver(key, port, database.url, refUrl, { nodeFlags: ['--import', sampler] });
    try {
      await runWrk(`http://127.0.0.1:${port}/webhooks`, warm.file, { connections: 64, seconds: 2 });
      const before = Number((await setup.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
      signal(child.pid);
      const r = await runWrk(`http://127.0.0.1:${port}/webhooks`, load.file, { connections: 64, seconds });
      signal(child.pid);
      const stored = Number((await setup.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n) - before;
      for (let waited = 0; !fs.existsSync(out); waited += 100) {
        if (waited > 30_000) throw new Error(`${key} wrote no allocation profile to ${out}`);
        await new Promise((res) => setTimeout(res, 100));
      }
      await new Promise((res) => setTimeout(res, 200));
      const { total, self, inclusive } = summarise((JSON.parse(fs.readFileSync(out, 'utf8')) as { head: ProfileNode }).head);
      const per = (bytes: number): string => (bytes / stored).toFixed(0).padStart(7);
      console.log(
        `\n${key}: ${per(total).trim()} B allocated per stored event (${stored} stored, ${(r.requests / r.durationS).toFixed(0)} req/s)`,
      );
      console.log('  B/event  allocated in (self)');
      for (const [name, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${per(bytes)}  ${name}`);
      console.log('  B/event  allocated in or under (inclusive)');
      for (const [name, bytes] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(1, top + 1)) console.log(`  ${per(bytes)}  ${name}`);
      totals.push([key, total / stored]);
    } finally {
      await stop(child);
    }
  }
} finally {
  await release();
  if (keep === undefined) fs.rmSync(dir, { recursive: true, force: true });
}
console.log('');
for (const [key, perEvent] of totals) {
  console.log(
    `${key.padEnd(16)} ${perEvent.toFixed(0).padStart(7)} B/event  vs ${totals[0]![0]}: ${(perEvent / totals[0]![1]).toFixed(3)}x`,
  );
}
