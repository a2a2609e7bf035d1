import type http from 'node:http';
import { isPostroomError } from '../errors.js';
import { runAction } from './action-routes.js';
import { ASSETS } from './assets.js';
import { field, readForm, redirect, securityHeaders } from './http.js';
import {
  h,
  isSignedIn,
  message,
  nobodysPage,
  openExchange,
  type Element,
  type Exchange,
  type RouterDeps,
  type SignedIn,
} from './routing.js';
import { BASE, urls } from './urls.js';
import { showView } from './view-routes.js';
import { Login } from './views/pages.js';

/** A path under /console, split into its segments (each decoded; a malformed escape is not a console path). */
function segments(pathname: string): string[] | undefined {
  try {
    return pathname
      .slice(BASE.length)
      .split('/')
      .filter((s) => s !== '')
      .map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

/** Where to go after logging in: a console page, never another site. */
function safeNext(next: string | undefined): string {
  return next !== undefined && next.startsWith(`${BASE}`) && !next.startsWith('//') && !/[\\\r\n]/.test(next) ? next : BASE;
}

const statusOf = (err: unknown): number => {
  const s = isPostroomError(err) ? err.details?.status : undefined;
  return typeof s === 'number' ? s : 400;
};

const loginForm =
  (deps: RouterDeps, next: string | undefined, failed: boolean): Element =>
  (ctx) =>
    h(Login, { ctx, next, failed, proxyOnly: deps.access.proxyOnly });

/** The stylesheet and the script: they carry no data and are the same for everyone, so a browser may keep them. */
async function serveAsset(req: http.IncomingMessage, res: http.ServerResponse, name: string): Promise<void> {
  // Its own names only: `constructor` or `__proto__` is what every object inherits, not a file.
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name as keyof typeof ASSETS] : undefined;
  if (!asset) return nobodysPage(res, 404, message('Not found', 'No such file.'));
  securityHeaders(res, true);
  res.writeHead(200, { 'Content-Type': asset.type, 'Content-Length': Buffer.byteLength(asset.body) });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}

/** GET /console/login: the form, or `postroom console`'s link with its token; a browser with a session goes on. */
async function loginPage(deps: RouterDeps, x: Exchange, proxyMissing: boolean): Promise<void> {
  const token = x.url.searchParams.get('token');
  if (token !== null) {
    // `postroom console` prints a link with its token: log in, then drop the token from the address bar.
    const done = deps.access.login(x.req, token, { localOnly: true });
    if (done) return redirect(x.res, BASE, [done.cookie]);
    return nobodysPage(x.res, 401, loginForm(deps, undefined, true));
  }
  if (x.session) return redirect(x.res, safeNext(field(x.url.searchParams, 'next', 2048)), x.cookies);
  return nobodysPage(x.res, proxyMissing ? 401 : 200, loginForm(deps, field(x.url.searchParams, 'next', 2048), false));
}

/** POST /console/login: a token typed into the form. A wrong one is logged with where it came from, never itself. */
async function logIn(deps: RouterDeps, x: Exchange): Promise<void> {
  let form: URLSearchParams;
  try {
    form = await readForm(x.req);
  } catch (err) {
    return nobodysPage(x.res, statusOf(err), message('Refused', (err as Error).message));
  }
  const done = deps.access.login(x.req, form.get('token') ?? '');
  if (!done) {
    deps.logger.warn({ remote: x.req.socket.remoteAddress }, 'console login refused: wrong token');
    return nobodysPage(x.res, 401, loginForm(deps, field(form, 'next', 2048), true));
  }
  deps.logger.info({ user: done.session.identity.name, role: done.session.identity.role }, 'console login');
  return redirect(x.res, safeNext(field(form, 'next', 2048)), [done.cookie]);
}

/**
 * No session: a page read in a browser goes to the login form, and back after it; anything else, or any
 * request when only the proxy can log anyone in, is answered 401 with the form.
 */
async function toLogin(deps: RouterDeps, x: Exchange, proxyMissing: boolean): Promise<void> {
  if (x.method === 'GET' && !proxyMissing) return redirect(x.res, urls.login(`${x.url.pathname}${x.url.search}`), x.cookies);
  return nobodysPage(x.res, 401, loginForm(deps, undefined, false));
}

/**
 * A POST by a logged-in session. Refused unless its form carries the session's CSRF token; then anyone may
 * log out, and only an operator may act.
 */
async function post(deps: RouterDeps, x: SignedIn): Promise<void> {
  let form: URLSearchParams;
  try {
    form = await readForm(x.req);
  } catch (err) {
    return x.page(statusOf(err), message('Refused', (err as Error).message));
  }
  if (!deps.access.csrfOk(x.session, form.get('_csrf')))
    return x.page(403, message('Refused', 'This form is stale or did not come from this console. Load the page again and retry.'));
  if (x.parts[0] === 'logout' && x.parts.length === 1) return redirect(x.res, urls.login(), [deps.access.logout(x.req, x.session)]);
  if (x.session.identity.role !== 'operator') return x.page(403, message('Not allowed', 'Only operators can do that; you are a viewer.'));
  return runAction(deps, x, form);
}

/**
 * In this order: a malformed address, the assets (no session touched), a user the proxy names
 * without a role here, the login form, no session, then a logged-in session's POST, GET or other method.
 */
async function route(deps: RouterDeps, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://console.invalid');
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  const parts = segments(url.pathname);
  if (!parts) return nobodysPage(res, 400, message('Bad request', 'That address is not valid.'));
  if (parts[0] === 'static' && parts.length === 2 && method === 'GET') return serveAsset(req, res, parts[1]!);

  const who = deps.access.resolve(req);
  if (who.refused !== undefined)
    return nobodysPage(res, 403, message('Not allowed', 'The proxy let you through, but this console gives you no role.'));
  const x = openExchange({ req, res, url, method, parts, session: who.session, cookies: [...who.cookies] });

  const login = parts[0] === 'login' && parts.length === 1;
  if (login && method === 'GET') return loginPage(deps, x, who.proxyMissing);
  if (login && method === 'POST') return logIn(deps, x);
  if (!isSignedIn(x)) return toLogin(deps, x, who.proxyMissing);
  if (method === 'POST') return post(deps, x);
  if (method !== 'GET') {
    res.setHeader('Allow', 'GET, HEAD, POST');
    return x.page(405, message('Method not allowed', 'The console answers GET and POST.'));
  }
  return showView(deps, x);
}

export function createRouter(deps: RouterDeps): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  // A request the console cannot use (a field too long, a form too large) is answered, not logged as a failure.
  return async (req, res) => {
    try {
      await route(deps, req, res);
    } catch (err) {
      if (!isPostroomError(err) || err.code !== 'bad_request' || res.headersSent) throw err;
      await nobodysPage(res, statusOf(err), message('Bad request', err.message));
    }
  };
}
