import type http from 'node:http';
import { PostroomError } from '../errors.js';

/**
 * Headers on every console response. The policy allows the console's own script and stylesheet and
 * nothing else: no inline script or style, no frames, no form posting elsewhere, no base rewriting.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export function securityHeaders(res: http.ServerResponse, cacheable = false): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  // Pages carry data and a CSRF token: never kept by a browser or a proxy. Assets are versioned and carry none.
  res.setHeader('Cache-Control', cacheable ? 'public, max-age=86400, immutable' : 'no-store');
}

export function sendHtml(res: http.ServerResponse, status: number, html: string, cookies: string[] = []): void {
  securityHeaders(res);
  if (cookies.length) res.setHeader('Set-Cookie', cookies);
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(html) });
  res.end(res.req.method === 'HEAD' ? undefined : html);
}

/** 303 See Other: after a POST, the browser GETs the page (reloading it does not repeat the action). */
export function redirect(res: http.ServerResponse, location: string, cookies: string[] = []): void {
  securityHeaders(res);
  if (cookies.length) res.setHeader('Set-Cookie', cookies);
  res.writeHead(303, { Location: location, 'Content-Length': 0 });
  res.end();
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
  }
  return out;
}

/** Form posts are small (a reason, a few filters): anything larger is refused before it is read whole. */
const MAX_FORM_BYTES = 16 * 1024;

export async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded')
    throw new PostroomError('bad_request', 'Send the form as application/x-www-form-urlencoded.', { details: { status: 415 } });
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_FORM_BYTES) throw new PostroomError('bad_request', 'The form is too large.', { details: { status: 413 } });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new PostroomError('bad_request', 'The form is too large.', { details: { status: 413 } });
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The value of a query or form field, trimmed, bounded, empty as undefined. */
export function field(params: URLSearchParams, name: string, max = 256): string | undefined {
  const v = params.get(name);
  if (v === null) return undefined;
  const t = v.trim();
  if (t === '') return undefined;
  if (t.length > max) throw new PostroomError('bad_request', `${name}: at most ${max} characters.`, { details: { status: 400 } });
  return t;
}
