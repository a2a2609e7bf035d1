/**
 * Ingest: correctly signed events at 64 connections for a fixed time against
 * postroom, a hand-written receiver, the HTTP-only ceiling, and the database's own
 * single-row insert rate, all in the same run on the same machine.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { silentLogger } from '../src/logging/logger.js';
import { benchDatabase } from './lib/pg.js';
import { sampleRss, startReceiver, stop } from './lib/processes.js';
import { BENCH_DIR, table, writeResult } from './lib/report.js';
import { requireWrk, runWrk, writeRequests } from './lib/wrk.js';

const SECRET = 'whsec_bench_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';

interface Row {
  variant: string;
  'accepted/s': number;
  'req/s': number;
  'p50 ms': number | string;
  'p99 ms': number | string;
  'max ms': number | string;
  'non-2xx': number;
  'RSS MiB': number | string;
}

async function singleRowInsertRate(url: string, connections: number, seconds: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: connections });
  await pool.query('CREATE TABLE IF NOT EXISTS raw_insert (event_id text PRIMARY KEY, payload jsonb)');
  const payload = JSON.stringify({ type: 'participant.acted', data: { correspondence_id: 'cor_1', participant_id: 'par_1', act: 'read', ref: 'x' } });
  let n = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) {
        await pool.query('INSERT INTO raw_insert (event_id, payload) VALUES ($1, $2) ON CONFLICT DO NOTHING', [randomUUID(), payload]);
        n++;
      }
    }),
  );
  await pool.end();
  return n / seconds;
}

async function countRows(url: string, tableName: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const r = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${tableName}`);
  await c.end();
  return r.rows[0]!.n;
}

export async function benchIngest(options: { seconds?: number; connections?: number } = {}): Promise<Record<string, unknown>> {
  requireWrk();
  const seconds = options.seconds ?? 10;
  const connections = options.connections ?? 64;
  const database = await benchDatabase();
  const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
  await migrate(db);
  await db.exec('CREATE TABLE naive_inbox (event_id text PRIMARY KEY, type text NOT NULL, payload jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now())');
  await db.close();
  const rows: Row[] = [];
  const port = 18_500 + Math.floor(Math.random() * 1000);
  const url = `http://127.0.0.1:${port}/webhooks`;
  // Enough pre-signed requests that the load generator never wraps round within the run.
  const budget = seconds * 40_000;

  const variants: Array<{ name: string; script: string; args: string[]; table?: string; dup?: number }> = [
    { name: 'postroom (group commit)', script: 'receivers/postroom.ts', args: ['store'], table: 'inbox' },
    { name: 'postroom, 10% duplicates', script: 'receivers/postroom.ts', args: ['store'], table: 'inbox', dup: 0.1 },
    { name: 'naive (INSERT per request)', script: 'receivers/naive.ts', args: [], table: 'naive_inbox' },
    { name: 'HTTP-only ceiling (no store)', script: 'receivers/postroom.ts', args: ['ceiling'] },
  ];
  try {
    for (const v of variants) {
      const before = v.table ? await countRows(database.url, v.table) : 0;
      const reqs = writeRequests(budget, SECRET, v.dup ?? 0);
      const child = await startReceiver(path.join(BENCH_DIR, v.script), [String(port), database.url, SECRET, ...v.args]);
      const rss = sampleRss(child.pid!);
      try {
        const w = await runWrk(url, reqs.file, { connections, seconds });
        const peak = rss.stop();
        const stored = v.table ? (await countRows(database.url, v.table)) - before : w.requests - w.non2xx;
        rows.push({
          variant: v.name,
          'accepted/s': Math.round(stored / w.durationS),
          'req/s': Math.round(w.requests / w.durationS),
          'p50 ms': w.p50Ms,
          'p99 ms': w.p99Ms,
          'max ms': w.maxMs,
          'non-2xx': w.non2xx + w.socketErrors + w.timeouts,
          'RSS MiB': Math.round(peak),
        });
      } finally {
        rss.stop();
        await stop(child);
        fs.rmSync(reqs.file, { force: true });
      }
    }
    const insertRate = await singleRowInsertRate(database.url, connections, seconds);
    rows.push({ variant: `pg single-row INSERT, ${connections} conns`, 'accepted/s': Math.round(insertRate), 'req/s': Math.round(insertRate), 'p50 ms': '', 'p99 ms': '', 'max ms': '', 'non-2xx': 0, 'RSS MiB': '' });
  } finally {
    await database.drop();
  }
  const get = (name: string): Row => rows.find((r) => r.variant.startsWith(name))!;
  const ours = get('postroom (group commit)')['req/s'];
  const ratios = {
    'postroom / naive': ours / get('naive')['req/s'],
    'postroom / HTTP-only ceiling': ours / get('HTTP-only ceiling')['req/s'],
    'postroom / pg single-row INSERT': ours / get('pg single-row')['req/s'],
  };
  console.log(`\nIngest: ${connections} connections, ${seconds} s per variant, unique signed events (one run with 10% duplicates)`);
  table(rows as unknown as Array<Record<string, string | number>>, ['variant', 'accepted/s', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx', 'RSS MiB']);
  for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(34)} ${v.toFixed(2)}x`);
  return { seconds, connections, rows, ratios };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchIngest({ seconds: Number(process.env.BENCH_SECONDS ?? 10) });
  console.log(`\nwrote ${writeResult('ingest', result)}`);
}
