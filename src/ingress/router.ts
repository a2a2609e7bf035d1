import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { IngressCore } from './accept.js';
import { createWebhookHandler, errorBody, sendJson, type WebhookHandler } from './http-handler.js';

export interface IngressRouterOptions {
  core: IngressCore;
  maxBodyBytes: number;
  logger: Logger;
  metrics?: Metrics;
  /** An existing handler to share (the standalone server routes to the same one directly). */
  handler?: WebhookHandler;
}

/**
 * For host apps that must keep a global `express.json()` in front of the
 * postroom router: pass this as its `verify` option so the exact bytes survive.
 *   app.use(express.json({ verify: captureRawBody }))
 */
export function captureRawBody(req: unknown, _res: unknown, buf: Buffer): void {
  (req as { rawBody?: Buffer }).rawBody = Buffer.from(buf);
}

/**
 * The webhook route as an Express router, mountable at any path of any app:
 *   POST /               verified with the configured secrets
 *   POST /:endpointId    verified with that endpoint's secrets
 * A thin adapter over the framework-free handler.
 */
export function createIngressRouter(options: IngressRouterOptions): express.Router {
  const router = express.Router();
  const handle = options.handler ?? createWebhookHandler(options);
  const methodNotAllowed = (_req: Request, res: Response): void => {
    sendJson(res, 405, errorBody('method_not_allowed', 'Webhooks are delivered with POST.'), { Allow: 'POST' });
  };
  router.post('/', (req, res) => handle(req, res, undefined));
  router.post('/:endpointId', (req, res) => handle(req, res, req.params.endpointId));
  router.all('/', methodNotAllowed);
  router.all('/:endpointId', methodNotAllowed);
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    options.logger.error({ err }, 'unexpected error in the webhook route');
    sendJson(res, 500, errorBody('internal_error', 'Unexpected error.'));
  });
  return router;
}
