// The receiver a user writes by hand: node:http, verify, one INSERT … ON CONFLICT
// per request on a pg.Pool of 16, 200 after it returns.
import http from 'node:http';
import pg from 'pg';
import { answer, readVerified } from './verify.mjs';

const [port, databaseUrl, secret] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: databaseUrl, max: 16 });
pool.on('error', () => undefined);
http
  .createServer((req, res) =>
    readVerified(
      req,
      secret,
      (event, body) => {
        pool.query('INSERT INTO ref_naive (event_id, body) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING', [event.event_id, body]).then(
          () => answer(res, 200),
          () => answer(res, 503),
        );
      },
      (s) => answer(res, s),
    ),
  )
  .listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
