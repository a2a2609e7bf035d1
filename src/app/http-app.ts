import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Readiness } from './readiness.js';

export interface HttpAppOptions {
  logger: Logger;
  readiness: Readiness;
  /** Served at /metrics unless metrics have their own port. */
  metrics?: { metrics: Metrics; beforeScrape?: () => Promise<void> };
}

export async function metricsText(m: { metrics: Metrics; beforeScrape?: () => Promise<void> }): Promise<string> {
  await m.beforeScrape?.().catch(() => undefined);
  return m.metrics.registry.metrics();
}

/** The standalone server's probes and metrics, and JSON 404s for everything else (the ingress handler answers /webhooks first). */
export function createHttpApp(options: HttpAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const report = await options.readiness.check();
    res.status(report.ready ? 200 : 503).json({ status: report.ready ? 'ready' : 'not_ready', checks: report.checks });
  });
  if (options.metrics) {
    const m = options.metrics;
    app.get('/metrics', async (_req, res) => {
      res.setHeader('Content-Type', m.metrics.registry.contentType);
      res.send(await metricsText(m));
    });
  }
  app.use((_req, res) => {
    res.status(404).json({ error: { code: 'not_found', message: 'No such route.' } });
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: unknown } | null)?.status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Caused by the request (anyone can send one): not worth more than a debug line.
      options.logger.debug({ err }, 'malformed request');
      if (!res.headersSent) res.status(status).json({ error: { code: 'bad_request', message: 'The request could not be understood.' } });
      return;
    }
    options.logger.error({ err }, 'unexpected error');
    if (!res.headersSent) res.status(500).json({ error: { code: 'internal_error', message: 'Unexpected error.' } });
  });
  return app;
}
