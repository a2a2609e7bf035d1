import express, { type NextFunction, type Request, type Response } from 'express';
import getRawBody from 'raw-body';
import type { Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { AcceptOutcome, IngressCore } from './accept.js';

export interface IngressRouterOptions {
  core: IngressCore;
  maxBodyBytes: number;
  logger: Logger;
  metrics?: Metrics;
}

type RequestWithRaw = Request & { rawBody?: unknown };

/**
 * For host apps that must keep a global `express.json()` in front of the
 * postroom router: pass this as its `verify` option so the exact bytes survive.
 *   app.use(express.json({ verify: captureRawBody }))
 */
export function captureRawBody(req: unknown, _res: unknown, buf: Buffer): void {
  (req as { rawBody?: Buffer }).rawBody = Buffer.from(buf);
}

function errorBody(code: string, message: string) {
  return { error: { code, message } };
}

const ENDPOINT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/**
 * The webhook route as a router, mountable at any path of any Express app:
 *   POST /               verified with the configured secrets
 *   POST /:endpointId    verified with that endpoint's secrets
 * It reads the body itself, byte-limited on this route only.
 */
export function createIngressRouter(options: IngressRouterOptions): express.Router {
  const router = express.Router();
  const { core, logger, metrics } = options;
  let warnedPreParsed = false;

  const record = (outcome: string, reason: string, startedAt: bigint): void => {
    if (!metrics) return;
    metrics.ingressRequests.inc({ outcome, reason });
    metrics.ackDuration.observe({ outcome }, Number(process.hrtime.bigint() - startedAt) / 1e9);
  };

  async function readBody(req: RequestWithRaw): Promise<Buffer | 'consumed'> {
    if (Buffer.isBuffer(req.rawBody)) return req.rawBody;
    // Another body parser already drained the stream: the exact bytes are gone.
    if (req.readableEnded || req.body !== undefined) return 'consumed';
    return getRawBody(req, { length: req.headers['content-length'], limit: options.maxBodyBytes });
  }

  const handle = async (req: Request, res: Response): Promise<void> => {
    const startedAt = process.hrtime.bigint();
    const endpointId = typeof req.params.endpointId === 'string' ? req.params.endpointId : undefined;
    if (endpointId !== undefined && !ENDPOINT_ID.test(endpointId)) {
      record('bad_request', 'endpoint_id', startedAt);
      res.status(404).json(errorBody('unknown_endpoint', 'No webhook route for that endpoint id.'));
      return;
    }
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity') {
      record('bad_request', 'content_encoding', startedAt);
      res.status(415).json(errorBody('unsupported_content_encoding', 'Send the body uncompressed: the signature covers the exact bytes.'));
      return;
    }

    let body: Buffer | 'consumed';
    try {
      body = await readBody(req as RequestWithRaw);
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type === 'entity.too.large') {
        record('too_large', '', startedAt);
        res.status(413).json(errorBody('payload_too_large', `Body exceeds the ${options.maxBodyBytes}-byte limit (POSTROOM_MAX_BODY_BYTES).`));
        return;
      }
      record('bad_request', type ?? 'read_error', startedAt);
      // A client that went away gets nothing; one that sent a bad length gets a 400.
      if (!res.headersSent && !req.destroyed) res.status(400).json(errorBody('bad_request', 'The request body could not be read.'));
      return;
    }
    if (body === 'consumed') {
      if (!warnedPreParsed) {
        warnedPreParsed = true;
        logger.error(
          'A body parser ran before the postroom webhook router and consumed the raw body, so signatures cannot be verified. ' +
            'Mount the postroom router before express.json(), or use express.json({ verify: captureRawBody }).',
        );
      }
      record('unavailable', 'raw_body_consumed', startedAt);
      res.status(500).json(errorBody('raw_body_unavailable', 'Server misconfiguration: the raw body was consumed before signature verification.'));
      return;
    }

    const outcome: AcceptOutcome = await core.accept({ rawBody: body, headers: req.headers, endpointId });
    switch (outcome.kind) {
      case 'accepted':
      case 'duplicate':
        metrics?.secretMatches.inc({ secret: outcome.secretLabel });
        observeSkew(outcome.skewSeconds);
        record(outcome.kind, '', startedAt);
        res.status(200).json({ status: outcome.kind });
        return;
      case 'quarantined':
        metrics?.secretMatches.inc({ secret: outcome.secretLabel });
        observeSkew(outcome.skewSeconds);
        record(outcome.duplicate ? 'duplicate' : 'quarantined', '', startedAt);
        res.status(200).json({ status: outcome.duplicate ? 'duplicate' : 'quarantined' });
        return;
      case 'invalid_signature':
        if (outcome.skewSeconds !== undefined && outcome.reason === 'timestamp_outside_window') observeSkew(outcome.skewSeconds);
        record('invalid_signature', outcome.reason, startedAt);
        res.status(401).json(errorBody(outcome.reason, 'Signature verification failed.'));
        return;
      case 'mismatched':
        record('mismatched', outcome.field, startedAt);
        res.status(400).json(errorBody(`${outcome.field}_mismatch`, `The X-Service-Event-${outcome.field === 'type' ? 'Type' : 'Id'} header does not match the signed body.`));
        return;
      case 'unavailable':
        record('unavailable', outcome.reason, startedAt);
        res.setHeader('Retry-After', String(outcome.retryAfterSeconds));
        res.status(503).json(errorBody('store_unavailable', 'The event could not be stored durably; retry later.'));
        return;
    }
  };

  function observeSkew(skew: number): void {
    metrics?.clockSkew.set(skew);
    metrics?.clockSkewAbs.observe(Math.abs(skew));
  }

  const methodNotAllowed = (_req: Request, res: Response): void => {
    res.setHeader('Allow', 'POST');
    res.status(405).json(errorBody('method_not_allowed', 'Webhooks are delivered with POST.'));
  };

  router.post('/', handle);
  router.post('/:endpointId', handle);
  router.all('/', methodNotAllowed);
  router.all('/:endpointId', methodNotAllowed);
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    logger.error({ err: (err as Error).message }, 'unexpected error in the webhook route');
    if (!res.headersSent) res.status(500).json(errorBody('internal_error', 'Unexpected error.'));
  });
  return router;
}
