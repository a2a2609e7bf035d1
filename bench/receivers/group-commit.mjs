// The simplest correct fast design: node:http, verify, then group commit: every
// request waiting while a flush runs goes into the next one multi-row INSERT
// (one flush in flight, no timer), and is answered after that commit.
// Tables, by the last argument:
// - `pk`: a table with a primary key only, holding the id and the body;
// - `pk_hash`: the same two columns, the id unique through a hash index (an
//   exclusion constraint), as postroom's inbox keeps it (migrations/012);
// - `inbox`: postroom's own inbox table with all its indexes, the raw bytes kept;
// - `wide`: the same columns as the inbox in a table with its primary key only
//   (bench/cpu.ts: what the inbox's other indexes cost, apart from its row);
// - `seen_intake`: the id into a table of its own (the primary key) and the row
//   into a table with no index at all, in one statement: the split of a seen-id
//   table and an intake table (docs/scaling.md), at ingest.
import http from 'node:http';
import pg from 'pg';
import { answer, readVerified } from './verify.mjs';

const [port, databaseUrl, secret, table = 'pk'] = process.argv.slice(2);
const client = new pg.Client({ connectionString: databaseUrl });
await client.connect();
const ROWS = `unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[]) AS u(i, t, o, b, c)`;
const COLUMNS = '(event_id, type, occurred_at, raw_body, correspondence_id)';
const SQL = {
  pk: `INSERT INTO ref_pk (event_id, body) SELECT i, decode(b, 'base64') FROM unnest($1::text[], $2::text[]) AS u(i, b)
       ON CONFLICT (event_id) DO NOTHING`,
  pk_hash: `INSERT INTO ref_pk_hash (event_id, body) SELECT i, decode(b, 'base64') FROM unnest($1::text[], $2::text[]) AS u(i, b)
       ON CONFLICT DO NOTHING`,
  // The ledger's event id is unique through an exclusion constraint (migrations/023), which a conflict target cannot
  // name; only the ids it took go into the partitioned inbox, with its instant (migrations/024).
  inbox: `WITH seen AS (INSERT INTO inbox_ids (event_id, received_at) SELECT i, now() FROM unnest($1::text[]) AS i ON CONFLICT DO NOTHING
                        RETURNING event_id, received_at)
       INSERT INTO inbox (event_id, type, occurred_at, raw_body, correspondence_id, received_at)
       SELECT i, t, o, decode(b, 'base64'), c, seen.received_at FROM ${ROWS} JOIN seen ON seen.event_id = u.i`,
  wide: `INSERT INTO ref_wide ${COLUMNS} SELECT i, t, o, decode(b, 'base64'), c FROM ${ROWS} ON CONFLICT (event_id) DO NOTHING`,
  seen_intake: `WITH seen AS (INSERT INTO ref_seen (event_id) SELECT i FROM unnest($1::text[]) AS i ON CONFLICT DO NOTHING RETURNING event_id)
       INSERT INTO ref_intake ${COLUMNS} SELECT i, t, o, decode(b, 'base64'), c FROM ${ROWS} JOIN seen ON seen.event_id = u.i`,
}[table];
if (!SQL) throw new Error(`unknown table ${table}: pk, pk_hash, inbox, wide or seen_intake`);
const queue = [];
let flushing = false;
async function flush() {
  flushing = true;
  while (queue.length > 0) {
    const batch = queue.splice(0, 1000);
    const seen = new Set();
    const rows = batch.filter((w) => !seen.has(w.event.event_id) && seen.add(w.event.event_id));
    const ids = rows.map((w) => w.event.event_id);
    const bodies = rows.map((w) => w.body.toString('base64'));
    const params =
      table === 'pk' || table === 'pk_hash'
        ? [ids, bodies]
        : [
            ids,
            rows.map((w) => w.event.type),
            rows.map((w) => w.event.at),
            bodies,
            rows.map((w) => w.event.data?.correspondence_id ?? null),
          ];
    const status = await client.query(SQL, params).then(
      () => 200,
      () => 503,
    );
    for (const w of batch) answer(w.res, status);
  }
  flushing = false;
}
http
  .createServer((req, res) =>
    readVerified(
      req,
      secret,
      (event, body) => {
        queue.push({ event, body, res });
        if (!flushing) void flush();
      },
      (s) => answer(res, s),
    ),
  )
  .listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
