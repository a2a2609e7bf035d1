/**
 * The console's pages on years of data (`npm run bench:scale` runs it after the inbox measurements, or
 * `npx tsx bench/console-scale.ts` alone; BENCH_CONSOLE_ROWS, default 10 million): an inbox filled inside
 * Postgres (generate_series, in chunks: COPY-speed inserts without sending a byte), with a year of history
 * nearly all finished, a backlog, failing, dead and quarantined events, gaps, reconcile runs with their
 * explanations, and three days of per-minute counts. Then the server time of every page, as the console's
 * own handler spends it (the request from its arrival to the last byte written), median of repeated loads.
 * Target: each page at most 150 ms at ten million events; no page reads all rows (test/console/plans.test.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createConsole } from '../src/console/index.js';
import { loadConfig } from '../src/config/config.js';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import type { Db } from '../src/db/types.js';
import { silentLogger } from '../src/logging/logger.js';
import { benchDatabase } from './lib/pg.js';
import { median } from './lib/receivers.js';
import { table, writeResult } from './lib/report.js';

const CHUNK = 500_000;
const CORRESPONDENCES = 1_000_000;
const TOKEN = 'operator-token-console-bench-0123456789';

/** A year of events, newest last: 1 in 2,000 dead, 1 in 5,000 quarantined, the last 2,000 a backlog (some failing). */
async function fill(db: Db, rows: number): Promise<void> {
  // A partition for each day of the year the rows span (migrations/024).
  await db.query(`SELECT inbox_partition_create((now() AT TIME ZONE 'UTC')::date - i) FROM generate_series(0, 366) i`);
  for (let lo = 0; lo < rows; lo += CHUNK) {
    const hi = Math.min(rows, lo + CHUNK);
    await db.query(
      `INSERT INTO inbox (event_id, type, occurred_at, received_at, raw_body, status, attempts, processed_at, pruned_at,
                          correspondence_id, endpoint_id, source, last_error, delivery_content_type, delivery_user_agent, secret_index)
       SELECT 'evt_' || md5(g::text), t.type, x.at, x.at,
              CASE WHEN g % 20 = 0 OR g > $3::int - 200000 THEN convert_to(
                '{"event_id":"evt_' || md5(g::text) || '","type":"' || t.type || '","at":"2026-01-01T00:00:00Z","data":{"correspondence_id":"cor_' || (g % ${CORRESPONDENCES}) || '","participant_id":"par_' || (g % 7) || '","act":"read","ref":"r","addressing":{"type":"nin","nin":"01019012345"},"display_name":"Kari Nordmann"}}', 'UTF8') END,
              s.status, CASE WHEN s.status = 'dead' THEN 10 ELSE 1 END,
              CASE WHEN s.status IN ('processed', 'skipped') THEN x.at + interval '1 second' END,
              CASE WHEN g % 20 <> 0 AND g <= $3::int - 200000 THEN x.at + interval '31 days' END,
              CASE WHEN t.type <> 'wallet.debited' THEN 'cor_' || (g % ${CORRESPONDENCES}) END, 'ep_' || (g % 3), 'webhook',
              CASE WHEN s.status IN ('dead', 'failed') THEN 'handler failed: the archive answered 503' END,
              'application/json', 'svc-webhooks/2', 0
       FROM generate_series($1::int, $2::int - 1) g
       CROSS JOIN LATERAL (SELECT now() - interval '365 days' + (g::float8 / $3::int) * interval '365 days' AS at) x
       CROSS JOIN LATERAL (SELECT (ARRAY['participant.acted', 'participant.acted', 'correspondence.created', 'correspondence.send_completed', 'wallet.debited', 'document.attached'])[1 + g % 6] AS type) t
       CROSS JOIN LATERAL (SELECT CASE
         WHEN g > $3::int - 2000 THEN (CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'received' END)
         WHEN g % 2000 = 7 THEN 'dead'
         WHEN g % 5000 = 11 THEN 'quarantined'
         WHEN g % 97 = 0 THEN 'skipped'
         ELSE 'processed' END AS status) s`,
      [lo, hi, rows],
    );
    process.stdout.write(`\r  filled ${hi.toLocaleString('en-US')} of ${rows.toLocaleString('en-US')}`);
  }
  process.stdout.write('\n');
  // Every stored id is in the ledger (migration 023), and lookups by id go through it to the one day that holds the
  // row (src/inbox/by-id.ts): without it, each would take the fallback that probes every day.
  await db.query('INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM inbox');
  await db.query('SELECT inbox_tally_rebuild()');
  // Three days of per-minute counts, as the triggers keep them.
  await db.query(
    `INSERT INTO inbox_minutes (minute, kind, shard, n)
     SELECT date_trunc('minute', now()) - m * interval '1 minute', k, 0, 20 + (m % 7)
     FROM generate_series(0, 3 * 1440 - 1) m, unnest(ARRAY['received', 'finished']) k
     ON CONFLICT DO NOTHING`,
  );
  await db.query(
    `INSERT INTO reconcile_gaps (event_id, event_type, endpoint_id, delivery_id, correspondence_id, status, reason, first_seen_at)
     SELECT 'evt_gap_' || g, 'participant.acted', 'ep_1', 'dlv_' || g, 'cor_' || (g * 37 % ${CORRESPONDENCES}),
            (ARRAY['recovered', 'state_synced', 'not_consumed', 'ignored', 'open'])[1 + g % 5], 'closed with evidence', now() - g * interval '1 minute'
     FROM generate_series(1, 50000) g`,
  );
  await db.query(
    `INSERT INTO reconcile_runs (started_at, finished_at, outcome, summary, holder)
     SELECT now() - g * interval '5 minutes', now() - g * interval '5 minutes' + interval '3 seconds', 'clean',
            '{"deliveries_scanned": 120, "gaps_found": 0, "gaps_open": 0, "at_risk": {"count": 0}, "synthetic_events_written": 0}', 'bench:1'
     FROM generate_series(1, 105000) g`,
  );
  await db.query(
    `INSERT INTO reconcile_explanations (explanation_id, correspondence_id, event_type, window_from, window_to, anchor, exact, outcome, single, detail)
     SELECT 'x' || g, 'cor_' || (g % ${CORRESPONDENCES}), 'participant.acted', now(), now(), now(), true, 'recovered', true, 'act read not applied'
     FROM generate_series(1, 200000) g`,
  );
  await db.query(
    `INSERT INTO console_audit (actor, role, via, action, target, affected)
     SELECT 'otto', 'operator', 'token', 'replay_event', 'evt_' || g, 1 FROM generate_series(1, 20000) g`,
  );
  await db.exec('VACUUM ANALYZE');
}

/** Serves the console and times each request inside the server, from arrival to the end of its response. */
async function serveTimed(db: Db): Promise<{ base: string; timings: number[]; close(): Promise<void> }> {
  const config = loadConfig({}).console;
  const served = createConsole({
    db,
    logger: silentLogger(),
    config,
    orderingHoldSeconds: 300,
    reconcile: { unavailable: 'not in the benchmark' },
    localLogin: { name: 'bench', token: TOKEN },
  });
  const timings: number[] = [];
  const server = http.createServer((req, res) => {
    const t = performance.now();
    res.on('finish', () => timings.push(performance.now() - t));
    if (!served.handle(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timings,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export async function benchConsoleScale(options: { rows?: number; repeats?: number } = {}): Promise<Record<string, unknown>> {
  const rows = options.rows ?? 10_000_000;
  const repeats = options.repeats ?? 15;
  const database = await benchDatabase();
  // No statement timeout: the fill's closing VACUUM ANALYZE of ten million rows can take minutes on a slow disk.
  const db = createPgDb({ url: database.url, poolSize: 4, logger: silentLogger(), statementTimeoutMs: 0 });
  const started = Date.now();
  try {
    await migrate(db);
    console.log(`\nConsole at scale: filling an inbox of ${rows.toLocaleString('en-US')} events`);
    await fill(db, rows);
    const fillSeconds = (Date.now() - started) / 1000;
    const sample = await db.query<{ event_id: string; correspondence_id: string; received_at: string }>(
      `SELECT event_id, correspondence_id, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_at
       FROM inbox WHERE status = 'dead' AND correspondence_id IS NOT NULL ORDER BY received_at LIMIT 1 OFFSET ${Math.floor(rows / 4000)}`,
    );
    const dead = sample.rows[0]!;
    const backlog = (
      await db.query<{ event_id: string }>(`SELECT event_id FROM inbox WHERE status = 'failed' AND correspondence_id IS NOT NULL LIMIT 1`)
    ).rows[0]!;
    const gap = (await db.query<{ gap_id: number }>(`SELECT gap_id::int AS gap_id FROM reconcile_gaps ORDER BY gap_id DESC LIMIT 1`))
      .rows[0]!;
    const middle = new Date(Date.now() - 180 * 86_400_000).toISOString().slice(0, 16);
    const pages: Array<[string, string]> = [
      ['overview', '/console'],
      ['inbox, newest', '/console/inbox'],
      ['inbox, an older page', `/console/inbox?before=${encodeURIComponent(`${dead.received_at}~${dead.event_id}`)}`],
      ['inbox, dead', '/console/inbox?status=dead'],
      ['inbox, processed', '/console/inbox?status=processed'],
      ['inbox, failed', '/console/inbox?status=failed'],
      ['inbox, type', '/console/inbox?type=document.attached'],
      ['inbox, rare type', '/console/inbox?type=form.response_received'],
      ['inbox, correspondence', `/console/inbox?correspondence=${dead.correspondence_id}`],
      ['inbox, endpoint', '/console/inbox?endpoint=ep_2'],
      ['inbox, event id', `/console/inbox?event=${dead.event_id}`],
      [
        'inbox, time range',
        `/console/inbox?from=${middle}&to=${encodeURIComponent(new Date(Date.now() - 179 * 86_400_000).toISOString().slice(0, 16))}`,
      ],
      ['inbox, dead + type + since', '/console/inbox?status=dead&type=participant.acted&from=90d'],
      ['event (dead)', `/console/events/${dead.event_id}`],
      ['event (failing, ordering)', `/console/events/${backlog.event_id}`],
      ['timeline', `/console/correspondence/${dead.correspondence_id}`],
      ['gaps, open', '/console/gaps?status=open'],
      ['gaps, all', '/console/gaps'],
      ['gap', `/console/gaps/${gap.gap_id}`],
      ['runs', '/console/runs'],
      ['runs, older page', '/console/runs?before=50000'],
      ['audit log', '/console/audit'],
      ['replay count (dead)', '/console/replay?status=dead'],
    ];
    const web = await serveTimed(db);
    const out: Array<Record<string, string | number>> = [];
    try {
      const login = await fetch(`${web.base}/console/login?token=${TOKEN}`, { redirect: 'manual' });
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      for (const [name, path] of pages) {
        const before = web.timings.length;
        for (let i = 0; i < repeats; i++) {
          const res = await fetch(`${web.base}${path}`, { headers: { cookie }, redirect: 'manual' });
          if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
          await res.arrayBuffer();
        }
        const xs = web.timings.slice(before);
        out.push({ page: name, 'median ms': median(xs), 'max ms': Math.max(...xs) });
      }
    } finally {
      await web.close();
    }
    console.log(
      `\nServer time per console page at ${rows.toLocaleString('en-US')} events (filled in ${Math.round(fillSeconds)} s), ${repeats} loads each:`,
    );
    table(out, ['page', 'median ms', 'max ms']);
    const worst = Math.max(...out.map((r) => r['median ms'] as number));
    console.log(`slowest page median: ${worst.toFixed(1)} ms (target: at most 150 ms)`);
    return { rows, repeats, fillSeconds, pages: out };
  } finally {
    await db.close();
    await database.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchConsoleScale({ rows: Number(process.env.BENCH_CONSOLE_ROWS ?? 10_000_000) });
  console.log(`\nwrote ${writeResult('console-scale', result)}`);
}
