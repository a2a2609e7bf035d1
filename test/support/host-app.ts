import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

/** Unsigned requests with malformed percent-encoding: a client error, never a 500 or an error-level log line. */
export const BAD_TARGETS = [
  '/webhooks/%ZZ',
  '/webhooks/%ZZ?x=1',
  '/webhooks/%',
  '/webhooks/%C0%AE%C0%AE',
  '/webhooks/%E0%A4%A?x=1',
  '/webhooks/%E0%A4%A',
  '/webhooks/%ZZ/',
  '/webhooks/ok%',
  '/webhooks/%00',
  '/webhooks/%2F',
  '/webhooks/%ZZ/extra',
  '/webhooks?%ZZ',
  '/webhooks/?x=%ZZ',
  // A '#' sends Express to url.parse, which reads '//user@host' as an authority once the prefix is cut.
  '/webhooks//;@:+?#',
  '/webhooks//a@b#',
  '/webhooks//a@b/c?x=1#y',
  '/webhooks/a#b',
  '/webhooks#',
  // Absolute-form, which RFC 9112 says a server must accept: Express routes by its path.
  'http://127.0.0.1/webhooks',
  'http://127.0.0.1/webhooks/%ZZ',
  'HTTP://x:1/webhooks/ep_1?x=1',
  'http://x/webhooks//a@b',
  'http://x/other',
];
export const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

/** An organisation's app that mounts the router at /webhooks, with a JSON 404 of its own like the standalone server's. */
export async function startHostApp(router: express.Router): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.use('/webhooks', router);
  app.use((_req, res) => {
    res.status(404).json({ error: { code: 'not_found', message: 'No such route.' } });
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
