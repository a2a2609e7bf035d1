import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { systemClock, type Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import type { OnErrorHook } from '../events/event-error.js';
import { createInboxWriter, type InboxWriter } from '../inbox/group-commit.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SecretProvider } from '../secrets/secret-provider.js';
import type { SignedPayloadScheme } from '../signature/index.js';
import { createIngressCore } from './accept.js';
import { createWebhookHandler, errorBody, sendJson, type WebhookHandler } from './http-handler.js';
import { INGRESS_DEFAULTS } from './defaults.js';
import { createIngressRouter } from './router.js';

export interface IngressOptions {
  /** The store the inbox rows are written to. */
  db: Db;
  secrets: SecretProvider;
  logger?: Logger | undefined;
  metrics?: Metrics | undefined;
  clock?: Clock | undefined;
  maxBatch?: number | undefined;
  toleranceSeconds?: number | undefined;
  scheme?: SignedPayloadScheme | undefined;
  ackTimeoutMs?: number | undefined;
  maxBodyBytes?: number | undefined;
  /** The handler's path prefix; `POST {path}` and `POST {path}/{endpoint_id}` are webhooks. */
  path?: string | undefined;
  /** Told of each signed body stored as quarantined. */
  onError?: OnErrorHook | undefined;
}

/**
 * A plain Node request listener for the webhook paths, like octokit's
 * createNodeMiddleware: it answers `{path}` and `{path}/{endpoint_id}` (every
 * method: POST is a delivery, anything else a 405) and hands any other request to
 * `next`, or answers it 404 when there is none.
 */
export type NodeWebhookHandler = (req: IncomingMessage, res: ServerResponse, next?: () => void) => void;

export interface Ingress {
  /** Framework-free: `http.createServer(ingress.handler)` or in front of any app. */
  handler: NodeWebhookHandler;
  /** The same route for an Express app: `app.use('/webhooks', ingress.router)`, before any express.json(). */
  router: express.Router;
  /** The group-commit writer both share; close it (after the server) to flush what is pending. */
  writer: InboxWriter;
}

/** Receiving, assembled once: writer, verification core, the Node handler and the Express router over it. */
export function createIngress(options: IngressOptions): Ingress {
  const logger = options.logger ?? silentLogger();
  const metrics = options.metrics;
  const ackTimeoutMs = options.ackTimeoutMs ?? INGRESS_DEFAULTS.ackTimeoutMs;
  const maxBodyBytes = options.maxBodyBytes ?? INGRESS_DEFAULTS.maxBodyBytes;
  const writer = createInboxWriter({
    db: options.db,
    logger,
    maxBatch: options.maxBatch ?? INGRESS_DEFAULTS.maxBatch,
    // Past the ack budget every waiter has been answered 503: abandon the flush and its connection.
    flushTimeoutMs: ackTimeoutMs,
    // A flush a tenth of the budget old is not normal (milliseconds are): the next one starts beside it, so a
    // hung connection holds up the rest for at most this long.
    stallMs: Math.max(1, Math.round(ackTimeoutMs / 10)),
    ...(metrics
      ? {
          onFlush: (s) => {
            metrics.ingressBatchSize.observe(s.rows);
            metrics.ingressFlushDuration.observe({ outcome: s.ok ? 'committed' : 'failed' }, s.durationMs / 1000);
          },
        }
      : {}),
  });
  const core = createIngressCore({
    writer,
    secrets: options.secrets,
    clock: options.clock ?? systemClock,
    logger,
    toleranceSeconds: options.toleranceSeconds ?? INGRESS_DEFAULTS.toleranceSeconds,
    scheme: options.scheme ?? INGRESS_DEFAULTS.scheme,
    ackTimeoutMs,
    onError: options.onError,
  });
  const post = createWebhookHandler({ core, logger, maxBodyBytes, metrics });
  const router = createIngressRouter({ core, logger, maxBodyBytes, metrics, handler: post });
  return { handler: routeWebhooks(post, options.path ?? INGRESS_DEFAULTS.path, router), router, writer };
}

const QUERY_OR_FRAGMENT = /[?#]/;
/**
 * What makes Express's URL parser (parseurl) give up its plain split and call
 * url.parse, whose reading differs: it takes `//user@host` in the target after
 * the mount prefix as an authority, and an absolute-form target by its path.
 */
const PARSED_BY_URL_PARSE = /[#\t\n\f\r \u00a0\ufeff]/;
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Routes as the Express router mounted at `path` does, so the two answer every
 * target alike: the path is the target up to `?` or `#`, the prefix matches
 * without regard to case, one segment is the endpoint id (percent-decoded; one
 * that does not decode names no endpoint), and each route takes one trailing
 * slash (so `{path}//` is the root route, as Express's non-strict routing has it).
 * The rare target Express would read with url.parse goes through Express itself,
 * the router mounted at `path` as a host app mounts it: that reading has too many
 * quirks to copy, and a copy would drift.
 */
function routeWebhooks(post: WebhookHandler, path: string, router: express.Router): NodeWebhookHandler {
  const base = path.replace(/\/+$/, '');
  const mounted = express.Router();
  mounted.use(base === '' ? '/' : base, router);
  const prefix = new RegExp(`^${escapeRegExp(base)}(?=/|$)`, 'i');
  const methodNotAllowed = (res: ServerResponse): void =>
    sendJson(res, 405, errorBody('method_not_allowed', 'Webhooks are delivered with POST.'), { Allow: 'POST' });
  const notFound = (res: ServerResponse): void => sendJson(res, 404, errorBody('not_found', 'No such route.'));
  return (req, res, next) => {
    const target = req.url ?? '';
    if (target.charCodeAt(0) !== 0x2f || PARSED_BY_URL_PARSE.test(target)) {
      // The mounted router answers every error itself: anything reaching here matched no route.
      mounted(req as express.Request, res as express.Response, () => (next ? next() : notFound(res)));
      return;
    }
    const cut = target.search(QUERY_OR_FRAGMENT);
    const pathname = cut === -1 ? target : target.slice(0, cut);
    // test, not exec: no match array per request. Without the u flag, /i matches each character of the
    // literal prefix with exactly one code unit, so what matched is as long as the prefix.
    const rest = prefix.test(pathname) ? pathname.slice(base.length) : undefined;
    const root = rest === '' || rest === '/' || rest === '//';
    const segment = rest === undefined || root ? undefined : /^\/([^/]+)\/?$/.exec(rest)?.[1];
    if (rest === undefined || (segment === undefined && !root)) {
      if (next) next();
      else notFound(res);
      return;
    }
    let endpointId = segment;
    let decodable = true;
    if (segment !== undefined) {
      try {
        endpointId = decodeURIComponent(segment);
      } catch {
        decodable = false;
      }
    }
    if (req.method !== 'POST') {
      if (decodable) methodNotAllowed(res);
      else sendJson(res, 404, errorBody('unknown_endpoint', 'No webhook route for that endpoint id.'));
      return;
    }
    // An id that does not decode keeps its raw form: the handler answers 404 for it (and counts it).
    post(req, res, endpointId);
  };
}
