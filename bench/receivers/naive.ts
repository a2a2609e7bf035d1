/**
 * The receiver a user would write by hand: raw body (no express.json), HMAC check,
 * one INSERT per request on a default-sized pg.Pool, then 200.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import express from 'express';
import pg from 'pg';

const [port, databaseUrl, secret] = process.argv.slice(2) as [string, string, string];
const pool = new pg.Pool({ connectionString: databaseUrl });
pool.on('error', () => undefined);
const app = express();
app.post('/webhooks', express.raw({ type: '*/*', limit: '1mb' }), async (req, res) => {
  const header = String(req.headers['x-service-signature'] ?? '');
  const m = /t=(\d+),v1=([0-9a-f]{64})/.exec(header);
  const body = req.body as Buffer;
  if (!m) return void res.status(401).end();
  const expected = createHmac('sha256', secret).update(body).digest();
  if (!timingSafeEqual(expected, Buffer.from(m[2]!, 'hex')) || Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return void res.status(401).end();
  const event = JSON.parse(body.toString('utf8')) as { event_id: string; type: string };
  try {
    await pool.query('INSERT INTO naive_inbox (event_id, type, payload) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING', [event.event_id, event.type, body.toString('utf8')]);
    res.status(200).json({ status: 'ok' });
  } catch {
    res.status(503).end();
  }
});
app.listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
