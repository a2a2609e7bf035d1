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
  router.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const client = clientError(err);
    if (client) {
      // Anyone can send these unsigned: logging them louder than debug would let them flood the log.
      options.logger.debug({ err, method: req.method }, 'malformed request to the webhook route');
      sendJson(res, client.status, errorBody(client.code, client.message));
      return;
    }
    options.logger.error({ err }, 'unexpected error in the webhook route');
    sendJson(res, 500, errorBody('internal_error', 'Unexpected error.'));
  });
  return router;
}

/**
 * Errors the request caused. An endpoint id that is not valid percent-encoding
 * names no endpoint: 404, as the standalone server's direct path answers it.
 */
function clientError(err: unknown): { status: number; code: string; message: string } | undefined {
  const status = (err as { status?: unknown; statusCode?: unknown } | null)?.status ?? (err as { statusCode?: unknown } | null)?.statusCode;
  if (err instanceof URIError || (status === 400 && /decode/i.test((err as Error).message))) {
    return { status: 404, code: 'unknown_endpoint', message: 'No webhook route for that endpoint id.' };
  }
  if (typeof status === 'number' && status >= 400 && status < 500)
    return { status, code: 'bad_request', message: 'The request could not be understood.' };
  return undefined;
}
