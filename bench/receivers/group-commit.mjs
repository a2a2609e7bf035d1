// The simplest correct fast design: node:http, verify, then group commit: every
// request waiting while a flush runs goes into the next one multi-row INSERT
// (one flush in flight, no timer), and is answered after that commit.
// Table `pk`: a table with a primary key only. Table `inbox`: postroom's own inbox
// table with all its indexes, the raw bytes kept.
import http from 'node:http';
import pg from 'pg';
import { answer, readVerified } from './verify.mjs';

const [port, databaseUrl, secret, table = 'pk'] = process.argv.slice(2);
const client = new pg.Client({ connectionString: databaseUrl });
await client.connect();
const SQL =
  table === 'inbox'
    ? `INSERT INTO inbox (event_id, type, occurred_at, raw_body, correspondence_id)
       SELECT i, t, o, decode(b, 'base64'), c FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[]) AS u(i, t, o, b, c)
       ON CONFLICT (event_id) DO NOTHING`
    : `INSERT INTO ref_pk (event_id, body) SELECT i, decode(b, 'base64') FROM unnest($1::text[], $2::text[]) AS u(i, b)
       ON CONFLICT (event_id) DO NOTHING`;
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
      table === 'inbox'
        ? [
            ids,
            rows.map((w) => w.event.type),
            rows.map((w) => w.event.at),
            bodies,
            rows.map((w) => w.event.data?.correspondence_id ?? null),
          ]
        : [ids, bodies];
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
