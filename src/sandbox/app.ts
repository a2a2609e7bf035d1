import express from 'express';
import type { Logger } from '../logging/logger.js';
import type { KeyStore } from './keys.js';
import { authenticate, bodyErrors, deferredJsonBody, errorHandler, notFoundRoute } from './routes/http.js';

export const API_PREFIX = '/sender/v2';
export const CONTROL_PREFIX = '/sandbox';

/**
 * The sandbox's HTTP surface: the service API under /sender/v2 and the sandbox-only
 * control routes under /sandbox, both behind an API key, both JSON with the same
 * error shape.
 */
export function createSandboxApp(deps: {
  keys: KeyStore;
  logger: Logger;
  maxBodyBytes: number;
  api: express.Router[];
  control: express.Router;
}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  // The key first (401 whatever the body), then the body is read; its errors wait for the scope check.
  const json = deferredJsonBody(deps.maxBodyBytes);
  const auth = authenticate(deps.keys);

  app.get('/', (_req, res) => {
    res.json({
      service: 'postroom sandbox (a local stand-in for the Correspondence Delivery Service)',
      api: API_PREFIX,
      control: CONTROL_PREFIX,
      docs: 'docs/sandbox.md',
    });
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.use(API_PREFIX, auth, json, ...deps.api, notFoundRoute());
  app.use(CONTROL_PREFIX, auth, json, bodyErrors, deps.control, notFoundRoute());
  app.use(notFoundRoute());
  app.use(errorHandler(deps.logger));
  return app;
}
