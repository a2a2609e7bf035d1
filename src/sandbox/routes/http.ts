import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { isPostroomError } from '../../errors.js';
import type { Logger } from '../../logging/logger.js';
import type { Scope } from '../catalogue.js';
import { SandboxApiError, apiErrors } from '../errors.js';
import { validateIdempotencyKey, type IdempotencyStore } from '../idempotency.js';
import type { Caller, KeyStore } from '../keys.js';

export interface Reply {
  status: number;
  body?: unknown;
}

export type Operation = (req: Request, caller: Caller) => Reply | Promise<Reply>;

export function reply(res: Response, r: Reply): void {
  if (r.body === undefined) res.status(r.status).end();
  else res.status(r.status).json(r.body);
}

/** `recipients[0].addressing.nin` from zod's path. */
function fieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  return out || 'body';
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw apiErrors.invalid(fieldPath(issue.path), issue.message);
}

export function queryParam(req: Request, name: string): string | undefined {
  const v = (req.query as Record<string, unknown>)[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw apiErrors.invalid(name, 'give this query parameter once, as a plain value');
  return v;
}

export function parseLimit(req: Request, bounds: { default: number; max: number }): number {
  const raw = queryParam(req, 'limit');
  if (raw === undefined) return bounds.default;
  if (!/^\d{1,7}$/.test(raw) || Number(raw) < 1 || Number(raw) > bounds.max)
    throw apiErrors.invalid('limit', `expected a whole number from 1 to ${bounds.max}`);
  return Number(raw);
}

/** Bearer key → caller, or 401. Keys are compared by their SHA-256 only. */
export function authenticate(keys: KeyStore): RequestHandler {
  return (req, res, next) => {
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
    if (!m) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      throw apiErrors.missingKey();
    }
    const caller = keys.authenticate(m[1]!);
    if (!caller) {
      res.setHeader('WWW-Authenticate', 'Bearer error="invalid_token"');
      throw apiErrors.invalidKey();
    }
    res.locals.caller = caller;
    next();
  };
}

/**
 * One API operation: scope check (403 naming the scope), then the body's own errors
 * (invalid JSON, not JSON), then the handler, through the idempotency store when the
 * request carries an Idempotency-Key.
 */
export function operation(scope: Scope | null, handler: Operation, options: { idempotency?: IdempotencyStore } = {}): RequestHandler {
  return async (req, res) => {
    const caller = res.locals.caller as Caller;
    if (scope && !caller.scopes.has(scope)) throw apiErrors.insufficientScope(scope);
    if (res.locals.bodyError !== undefined) throw res.locals.bodyError;
    const key = options.idempotency ? validateIdempotencyKey(req.headers['idempotency-key']) : undefined;
    if (!options.idempotency || key === undefined) {
      reply(res, await handler(req, caller));
      return;
    }
    // Keys are scoped per organisation (the sandbox has one), plane and operation: the same key sent
    // with a sandbox key and then a live one is two requests, and the live one must debit the wallet.
    const { response, replayed } = await options.idempotency.run(
      `${caller.plane} ${req.method} ${req.baseUrl}${req.path}`,
      key,
      req.body ?? null,
      async () => {
        const r = await handler(req, caller);
        return { status: r.status, body: r.body };
      },
    );
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    reply(res, response);
  };
}

/**
 * Parses a JSON body but keeps its errors (invalid JSON, not JSON, too large) in
 * `res.locals.bodyError` instead of answering: the key is checked first (401 whatever
 * the body), then the scope (403), and only then is the body's error the answer.
 * `operation()` and `bodyErrors` raise it at that point.
 */
export function deferredJsonBody(maxBodyBytes: number): RequestHandler {
  const json = express.json({ limit: maxBodyBytes, type: ['application/json', 'application/*+json'] });
  return (req, res, next) => {
    void json(req, res, (err?: unknown) => {
      if (err !== undefined && err !== null) res.locals.bodyError = err;
      else {
        try {
          requireJsonBody(req, res, () => undefined);
        } catch (e) {
          res.locals.bodyError = e;
        }
      }
      next();
    });
  };
}

/** For routes without a scope (the control routes): the body's error, once the key was accepted. */
export const bodyErrors: RequestHandler = (_req, res, next) => {
  if (res.locals.bodyError !== undefined) throw res.locals.bodyError;
  next();
};

/** A write with a body must say it is JSON; express.json leaves anything else unparsed. */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (hasBody && req.method !== 'GET' && req.method !== 'DELETE' && !req.is(['application/json', 'application/*+json'])) {
    throw new SandboxApiError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
  }
  if (req.body !== undefined && (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body))) {
    throw apiErrors.invalid('body', 'expected a JSON object');
  }
  next();
};

export function notFoundRoute(): RequestHandler {
  return (req) => {
    throw new SandboxApiError(404, 'route_not_found', `No route ${req.method} ${req.originalUrl.split('?')[0]!.slice(0, 200)}.`);
  };
}

export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    let e: SandboxApiError;
    const type = (err as { type?: string }).type;
    if (err instanceof SandboxApiError) e = err;
    else if (type === 'entity.parse.failed') e = new SandboxApiError(400, 'invalid_json', 'The body is not valid JSON.');
    else if (type === 'entity.too.large') e = new SandboxApiError(413, 'payload_too_large', 'The body is larger than the sandbox accepts.');
    else if (type === 'encoding.unsupported' || type === 'charset.unsupported')
      e = new SandboxApiError(415, 'unsupported_media_type', 'Send the body as UTF-8 JSON, uncompressed.');
    else if (isPostroomError(err)) e = new SandboxApiError(400, 'invalid_request', err.message);
    else {
      logger.error({ err, method: req.method, path: req.path }, 'sandbox: unexpected error');
      e = new SandboxApiError(500, 'internal_error', 'Unexpected error in the sandbox.');
    }
    if (!res.headersSent) res.status(e.status).json(e.body());
  };
}
