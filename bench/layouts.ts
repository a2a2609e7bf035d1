/**
 * What would a different inbox layout save Postgres? (`npx tsx bench/layouts.ts`)
 *
 * The completion rewrites a whole ~900-byte inbox row to change its status; a narrow table holding the queue's
 * state apart from the wide row would not. This measures what such a layout would save before anyone builds it. Each layout gets the same work, interleaved as `serve` does it: flushes of 32 new events (one
 * statement each, as ingress writes them), and after every eight flushes the completion of what is waiting, 125
 * events per statement (as the worker's batches end). Only the two writes every event pays for are measured; the
 * claim, the projection and the readers are the same work in every layout, give or take a join.
 *
 * - `today`: the inbox as the migrations leave it (its indexes read from the migrated schema, so this follows
 *   the migrations), written and completed in place.
 * - `tally`: today's, with the trigger that keeps inbox_tally (migrations/007) on the completion, as the product has
 *   it; every other layout leaves the trigger out, so `today` against `tally` is the trigger's own cost.
 * - `queue`: the inbox keeps its status, but no index reads it, and its pages keep room (fillfactor 50), so the
 *   completion can be a HOT update; a narrow queue table holds the unfinished events and the claim's indexes,
 *   and the completion deletes from it.
 * - `state`: the inbox row is never updated; a narrow state table, one row per event, holds the status, the
 *   attempts and the claim's indexes, and the completion updates that.
 * - `brin`: today's layout with the receipt-time B-tree replaced by a BRIN index, which a non-HOT update and an
 *   insert barely touch (listings newest-first would then need a time window).
 * - `roomy70`, `roomy50`: today's layout with the inbox's pages keeping 30% or 50% free. The completion still cannot
 *   be HOT (status is in the partial indexes' predicates), but a new version on its old row's page is logged
 *   without the bytes the two versions share (the body comes before the status), so the completion writes less WAL.
 *
 * LAYOUT_LAYOUTS (comma-separated) measures only those layouts; `today` is always the base of the ratios.
 * Postgres time is the serving backend's own CPU, from /proc/<pid>/schedstat (so Postgres must run on this machine),
 * summed over the statements of each kind: no round trips, no client. Commits do not wait for the disk
 * (synchronous_commit off), which every layout would pay alike. Layouts alternate, LAYOUT_ROUNDS times (default 3),
 * LAYOUT_EVENTS events each (default 40,000), in a database of their own that is dropped at the end.
 */
import fs from 'node:fs';
import pg from 'pg';
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { silentLogger } from '../src/logging/logger.js';
import { benchDatabase } from './lib/pg.js';
import { median } from './lib/receivers.js';
import { table, writeResult } from './lib/report.js';

const EVENTS = Number(process.env.LAYOUT_EVENTS ?? 40_000);
const ROUNDS = Number(process.env.LAYOUT_ROUNDS ?? 3);
const FLUSH = 32;
const BATCH = 125;
const FLUSHES_PER_COMPLETION = 8;

const ALL_LAYOUTS = ['today', 'tally', 'queue', 'state', 'brin', 'roomy70', 'roomy50'] as const;
type Layout = (typeof ALL_LAYOUTS)[number];
const LAYOUTS: readonly Layout[] = process.env.LAYOUT_LAYOUTS
  ? [
      'today',
      ...process.env.LAYOUT_LAYOUTS.split(',')
        .filter((l) => l !== 'today')
        .map((l) => {
          if (!(ALL_LAYOUTS as readonly string[]).includes(l)) throw new Error(`unknown layout ${l}; known: ${ALL_LAYOUTS.join(', ')}`);
          return l as Layout;
        }),
    ]
  : ALL_LAYOUTS;

/** Today's inbox indexes, as the migrations made them, moved to another schema. */
async function todaysIndexes(c: pg.Client, schema: string): Promise<string[]> {
  const res = await c.query<{ indexdef: string }>(
    `SELECT indexdef FROM pg_indexes WHERE schemaname = 'postroom' AND tablename = 'inbox' AND indexname <> 'inbox_event_id_excl'`,
  );
  return res.rows.map((r) => r.indexdef.replace(/^CREATE INDEX \S+ ON postroom\.inbox/, `CREATE INDEX ON ${schema}.inbox`));
}

async function createLayout(c: pg.Client, layout: Layout): Promise<void> {
  const s = layout;
  await c.query(`DROP SCHEMA IF EXISTS ${s} CASCADE; CREATE SCHEMA ${s}`);
  await c.query(`CREATE TABLE ${s}.inbox (LIKE postroom.inbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
  await c.query(`ALTER TABLE ${s}.inbox ADD CONSTRAINT ${s}_inbox_event_id_excl EXCLUDE USING hash (event_id WITH =)`);
  const unfinished = `status IN ('received', 'failed')`;
  switch (layout) {
    case 'today':
      for (const sql of await todaysIndexes(c, s)) await c.query(sql);
      return;
    case 'tally':
      for (const sql of await todaysIndexes(c, s)) await c.query(sql);
      await c.query(`CREATE TRIGGER inbox_tally_update AFTER UPDATE ON ${s}.inbox
        REFERENCING OLD TABLE AS tally_old NEW TABLE AS tally_new
        FOR EACH STATEMENT EXECUTE FUNCTION postroom.inbox_tally_apply()`);
      return;
    case 'roomy70':
    case 'roomy50':
      for (const sql of await todaysIndexes(c, s)) await c.query(sql);
      await c.query(`ALTER TABLE ${s}.inbox SET (fillfactor = ${layout.slice(5)})`);
      return;
    case 'brin':
      for (const sql of await todaysIndexes(c, s)) {
        await c.query(/\(received_at\)$/.test(sql) ? `CREATE INDEX ON ${s}.inbox USING brin (received_at)` : sql);
      }
      return;
    case 'queue':
      await c.query(`ALTER TABLE ${s}.inbox SET (fillfactor = 50); CREATE INDEX ON ${s}.inbox (received_at)`);
      await c.query(`
        CREATE TABLE ${s}.queue (event_id text NOT NULL, correspondence_id text, occurred_at timestamptz,
          received_at timestamptz NOT NULL DEFAULT now(), next_attempt_at timestamptz NOT NULL DEFAULT now(), status text NOT NULL);
        ALTER TABLE ${s}.queue ADD CONSTRAINT ${s}_queue_event_id_excl EXCLUDE USING hash (event_id WITH =);
        CREATE INDEX ON ${s}.queue (occurred_at, event_id COLLATE "C") WHERE ${unfinished};
        CREATE INDEX ON ${s}.queue (correspondence_id, occurred_at) WHERE ${unfinished};
        CREATE INDEX ON ${s}.queue (received_at);`);
      return;
    case 'state':
      await c.query(`CREATE INDEX ON ${s}.inbox (received_at)`);
      await c.query(`
        CREATE TABLE ${s}.state (event_id text NOT NULL, status text NOT NULL, attempts int NOT NULL DEFAULT 0,
          next_attempt_at timestamptz NOT NULL DEFAULT now(), correspondence_id text, occurred_at timestamptz,
          received_at timestamptz NOT NULL DEFAULT now(), last_error text, processed_at timestamptz);
        ALTER TABLE ${s}.state ADD CONSTRAINT ${s}_state_event_id_excl EXCLUDE USING hash (event_id WITH =);
        CREATE INDEX ON ${s}.state (status, received_at DESC) WHERE status IN ('failed', 'dead', 'quarantined');
        CREATE INDEX ON ${s}.state (occurred_at, event_id COLLATE "C") WHERE ${unfinished};
        CREATE INDEX ON ${s}.state (correspondence_id, occurred_at) WHERE ${unfinished};
        CREATE INDEX ON ${s}.state (received_at) WHERE ${unfinished};`);
      return;
  }
}

/** The narrow table a layout writes beside the inbox, if any. */
const SIDE: Record<Layout, string | undefined> = {
  today: undefined,
  tally: undefined,
  brin: undefined,
  roomy70: undefined,
  roomy50: undefined,
  queue: 'queue',
  state: 'state',
};

function insertSql(layout: Layout): string {
  const s = layout;
  const inbox = `INSERT INTO ${s}.inbox (event_id, type, occurred_at, raw_body, signature_header, delivery_content_type,
      delivery_user_agent, endpoint_id, source, correspondence_id, secret_index, status)
    SELECT e, 'correspondence.participant_state_changed', o, substring($4::bytea FROM 1 + (n::int - 1) * 650 FOR 650),
           't=1764300000,v1=' || md5(e) || md5(e), 'application/json', 'CorrespondenceService-Webhooks/2.0', 'ep_primary', 'webhook', c, 0, 'received'
    FROM unnest($1::text[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS x(e, c, o, n)
    ON CONFLICT DO NOTHING`;
  const side = SIDE[layout];
  if (!side) return inbox;
  return `WITH i AS (${inbox} RETURNING event_id, correspondence_id, occurred_at)
    INSERT INTO ${s}.${side} (event_id, correspondence_id, occurred_at, status) SELECT event_id, correspondence_id, occurred_at, 'received' FROM i`;
}

function completeSql(layout: Layout): string {
  const s = layout;
  const set = `SET status = 'processed', attempts = t.attempts + 1, processed_at = now()
    WHERE t.event_id = ANY($1::text[]) AND t.status COLLATE "C" IN ('received', 'failed')`;
  switch (layout) {
    case 'today':
    case 'tally':
    case 'brin':
    case 'roomy70':
    case 'roomy50':
      return `UPDATE ${s}.inbox t ${set}`;
    case 'queue':
      return `WITH gone AS (DELETE FROM ${s}.queue WHERE event_id = ANY($1::text[]))
        UPDATE ${s}.inbox t ${set}`;
    case 'state':
      return `UPDATE ${s}.state t ${set}`;
  }
}

/**
 * The table's updates and HOT updates so far, from the shared statistics. A backend sends its counts there at
 * most once a second; pg_stat_force_next_flush() makes it send them at the end of this statement's transaction,
 * so the next statement (a transaction of its own) reads every count up to here.
 */
async function updateCounts(c: pg.Client, schema: string, relation: string): Promise<{ updates: number; hot: number }> {
  await c.query('SELECT pg_stat_force_next_flush()');
  const res = await c.query<{ upd: string; hot: string }>(
    `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`,
    [schema, relation],
  );
  return { updates: Number(res.rows[0]?.upd ?? 0), hot: Number(res.rows[0]?.hot ?? 0) };
}

/** CPU nanoseconds the backend has run so far (the first field of schedstat). */
function backendCpuNs(pid: number): number {
  return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

interface RoundResult {
  layout: Layout;
  ingestUs: number;
  completeUs: number;
  ingestWal: number;
  completeWal: number;
  bytesPerEvent: number;
  hotShare: number;
}

let sequence = 0;
function newEvents(n: number): { ids: string[]; correspondences: string[]; occurred: string[]; bodies: Buffer } {
  const ids: string[] = [];
  const correspondences: string[] = [];
  const occurred: string[] = [];
  for (let i = 0; i < n; i++) {
    sequence++;
    ids.push(`evt_${sequence.toString(36).padStart(8, '0')}${Math.random().toString(36).slice(2, 16)}`);
    // Four events per correspondence, as a send with a few participants gives.
    correspondences.push(`cor_${(sequence >> 2).toString(36).padStart(10, '0')}`);
    occurred.push(new Date(1_764_300_000_000 + sequence).toISOString());
  }
  return { ids, correspondences, occurred, bodies: Buffer.alloc(650 * n, 'x') };
}

async function runRound(c: pg.Client, pid: number, layout: Layout): Promise<RoundResult> {
  const s = layout;
  const side = SIDE[layout];
  await c.query(`TRUNCATE ${s}.inbox${side ? `, ${s}.${side}` : ''}`);
  await c.query('CHECKPOINT');
  const updated = side === 'state' ? 'state' : 'inbox';
  const hotBefore = await updateCounts(c, s, updated);
  const insert = { name: `insert_${s}`, text: insertSql(layout) };
  const complete = { name: `complete_${s}`, text: completeSql(layout) };
  const lsn = async (): Promise<string> => (await c.query<{ l: string }>('SELECT pg_current_wal_insert_lsn() AS l')).rows[0]!.l;
  const walSince = async (from: string): Promise<number> =>
    Number((await c.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1) AS d', [from])).rows[0]!.d);
  const timed = async (fn: () => Promise<unknown>): Promise<{ ns: number; wal: number }> => {
    const from = await lsn();
    const before = backendCpuNs(pid);
    await fn();
    const ns = backendCpuNs(pid) - before;
    return { ns, wal: await walSince(from) };
  };
  let ingestNs = 0,
    completeNs = 0,
    ingestWal = 0,
    completeWal = 0,
    done = 0;
  const waiting: string[] = [];
  while (done < EVENTS) {
    for (let f = 0; f < FLUSHES_PER_COMPLETION; f++) {
      const e = newEvents(FLUSH);
      const t = await timed(() => c.query(insert, [e.ids, e.correspondences, e.occurred, e.bodies]));
      ingestNs += t.ns;
      ingestWal += t.wal;
      waiting.push(...e.ids);
    }
    while (waiting.length >= BATCH && done < EVENTS) {
      const batch = waiting.splice(0, BATCH);
      const t = await timed(() => c.query(complete, [batch]));
      completeNs += t.ns;
      completeWal += t.wal;
      done += batch.length;
    }
  }
  const hot = await updateCounts(c, s, updated);
  const size = await c.query<{ b: string }>(
    `SELECT pg_total_relation_size('${s}.inbox')${side ? ` + pg_total_relation_size('${s}.${side}')` : ''} AS b`,
  );
  const upd = hot.updates - hotBefore.updates;
  return {
    layout,
    ingestUs: ingestNs / 1000 / done,
    completeUs: completeNs / 1000 / done,
    ingestWal: ingestWal / done,
    completeWal: completeWal / done,
    bytesPerEvent: Number(size.rows[0]!.b) / done,
    hotShare: upd > 0 ? (hot.hot - hotBefore.hot) / upd : 0,
  };
}

const database = await benchDatabase();
try {
  const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
  await migrate(db);
  await db.close();
  const c = new pg.Client({ connectionString: database.url });
  // The database is dropped WITH (FORCE) at the end, also after a failure, which ends this connection.
  c.on('error', () => {});
  await c.connect();
  // As the worker's completion does (src/worker/complete-queries.ts): rows by key, whatever the statistics of a new table say.
  await c.query('SET synchronous_commit = off; SET jit = off; SET enable_seqscan = off; SET enable_nestloop = off');
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  if (!fs.existsSync(`/proc/${pid}/schedstat`)) throw new Error('Postgres must run on this machine: its backend CPU is read from /proc');
  for (const layout of LAYOUTS) await createLayout(c, layout);
  const rounds: RoundResult[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    for (const layout of LAYOUTS) {
      const res = await runRound(c, pid, layout);
      rounds.push(res);
      console.log(
        `round ${r} ${layout.padEnd(6)} ingest ${res.ingestUs.toFixed(1)} µs  complete ${res.completeUs.toFixed(1)} µs  ` +
          `WAL ${res.ingestWal.toFixed(0)} + ${res.completeWal.toFixed(0)} B  HOT ${(100 * res.hotShare).toFixed(0)}%`,
      );
    }
  }
  await c.end();
  const med = (layout: Layout, k: keyof Omit<RoundResult, 'layout'>): number =>
    median(rounds.filter((x) => x.layout === layout).map((x) => x[k]));
  const base = med('today', 'ingestUs') + med('today', 'completeUs');
  const rows = LAYOUTS.map((layout) => {
    const total = med(layout, 'ingestUs') + med(layout, 'completeUs');
    return {
      layout,
      'ingest µs/event': med(layout, 'ingestUs').toFixed(1),
      'ingest vs today': `${(med(layout, 'ingestUs') / med('today', 'ingestUs')).toFixed(2)}x`,
      'complete µs/event': med(layout, 'completeUs').toFixed(1),
      'both µs/event': total.toFixed(1),
      'both vs today': `${(total / base).toFixed(2)}x`,
      'WAL B/event': (med(layout, 'ingestWal') + med(layout, 'completeWal')).toFixed(0),
      'HOT completions': `${(100 * med(layout, 'hotShare')).toFixed(0)}%`,
      'bytes/event on disk': med(layout, 'bytesPerEvent').toFixed(0),
    };
  });
  console.log(`\nmedians of ${ROUNDS} rounds, ${EVENTS} events each (Postgres backend CPU per event)\n`);
  table(rows, Object.keys(rows[0]!));
  console.log(`\nwrote ${writeResult('layouts', { events: EVENTS, rounds: ROUNDS, perRound: rounds, medians: rows })}`);
} finally {
  await database.drop();
}
