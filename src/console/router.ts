import type http from 'node:http';
import { jsx, type FC, type JSXNode } from 'hono/jsx';
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { isPostroomError } from '../errors.js';
import { pageInbox, type InboxPage } from '../inbox/browse-queries.js';
import { countReplayable } from '../inbox/admin-queries.js';
import { getInboxEvent } from '../inbox/read-queries.js';
import type { Logger } from '../logging/logger.js';
import { GAP_STATUSES, getGap, pageGaps, type GapStatus } from '../reconciler/gap-queries.js';
import { getRun, listRuns } from '../reconciler/state-queries.js';
import type { Access } from './access.js';
import type { Actions } from './actions.js';
import { ASSETS, ASSET_VERSION } from './assets.js';
import { listAudit } from './audit-queries.js';
import type { Session } from './auth/sessions.js';
import { FilterError, inboxQueryOf, parseCursor, parseId, readInboxQuery, replayFilter, toBrowseFilter } from './filters.js';
import { field, readForm, redirect, securityHeaders, sendHtml } from './http.js';
import { loadEvent, loadOverview, loadTimeline } from './pages.js';
import type { PanelSource } from './panels.js';
import { BASE, urls } from './urls.js';
import { Timeline } from './views/correspondence.js';
import { EventView } from './views/event.js';
import { Inbox } from './views/inbox.js';
import type { PageContext } from './views/layout.js';
import { Overview } from './views/overview.js';
import { AuditLog, Login, Message, ReplayConfirm } from './views/pages.js';
import { GapView, Gaps, RunView, Runs } from './views/reconcile.js';

interface RouterDeps {
  db: Db;
  logger: Logger;
  clock: Clock;
  access: Access;
  actions: Actions;
  orderingHoldSeconds: number;
  panels: readonly PanelSource[];
  reconcileUnavailable: string | undefined;
}

const PAGE = 50;
/** How long a reveal lasts in the session that asked for it. */
const REVEAL_MS = 10 * 60_000;

/** An element of a component with its props (the router is plain TypeScript; the views are JSX). */
const h = <P extends object>(component: FC<P>, props: P): JSXNode => jsx(component as FC, props as Record<string, unknown>);

async function html(el: JSXNode): Promise<string> {
  return `<!doctype html>${await el.toString()}`;
}

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

export function createRouter(deps: RouterDeps): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  const { db, access, actions } = deps;

  // A request the console cannot use (a field too long, a form too large) is answered, not logged as a failure.
  return async (req, res) => {
    try {
      await route(req, res);
    } catch (err) {
      if (!isPostroomError(err) || err.code !== 'bad_request' || res.headersSent) throw err;
      sendHtml(
        res,
        statusOf(err),
        await html(
          h(Message, {
            ctx: { identity: undefined, csrf: undefined, flash: undefined, assetVersion: ASSET_VERSION },
            title: 'Bad request',
            text: err.message,
          }),
        ),
      );
    }
  };

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const parts = segments(url.pathname);
    const ctxFor = (session: Session | undefined): PageContext => {
      const flash = session?.flash;
      if (session) session.flash = undefined;
      return { identity: session?.identity, csrf: session?.csrf, flash, assetVersion: ASSET_VERSION };
    };
    const page = async (status: number, session: Session | undefined, el: (ctx: PageContext) => JSXNode, cookies: string[] = []) =>
      sendHtml(res, status, await html(el(ctxFor(session))), cookies);

    if (!parts) return page(400, undefined, (ctx) => h(Message, { ctx, title: 'Bad request', text: 'That address is not valid.' }));

    // The stylesheet and script carry no data and are the same for everyone.
    if (parts[0] === 'static' && parts.length === 2 && method === 'GET') {
      const asset = ASSETS[parts[1] as keyof typeof ASSETS];
      if (!asset) return page(404, undefined, (ctx) => h(Message, { ctx, title: 'Not found', text: 'No such file.' }));
      securityHeaders(res, true);
      res.writeHead(200, { 'Content-Type': asset.type, 'Content-Length': Buffer.byteLength(asset.body) });
      res.end(req.method === 'HEAD' ? undefined : asset.body);
      return;
    }

    const who = access.resolve(req);
    const cookies = [...who.cookies];
    if (who.refused !== undefined)
      return page(403, undefined, (ctx) =>
        h(Message, { ctx, title: 'Not allowed', text: 'The proxy let you through, but this console gives you no role.' }),
      );

    if (parts[0] === 'login' && parts.length === 1) {
      if (method === 'GET') {
        const token = url.searchParams.get('token');
        if (token !== null) {
          // `postroom console` prints a link with its token: log in, then drop the token from the address bar.
          const done = access.login(req, token, { localOnly: true });
          if (done) return redirect(res, BASE, [done.cookie]);
          return page(401, undefined, (ctx) => h(Login, { ctx, next: undefined, failed: true, proxyOnly: access.proxyOnly }));
        }
        if (who.session) return redirect(res, safeNext(field(url.searchParams, 'next', 2048)), cookies);
        return page(who.proxyMissing ? 401 : 200, undefined, (ctx) =>
          h(Login, { ctx, next: field(url.searchParams, 'next', 2048), failed: false, proxyOnly: access.proxyOnly }),
        );
      }
      if (method === 'POST') {
        let form: URLSearchParams;
        try {
          form = await readForm(req);
        } catch (err) {
          return page(statusOf(err), undefined, (ctx) => h(Message, { ctx, title: 'Refused', text: (err as Error).message }));
        }
        const done = access.login(req, form.get('token') ?? '');
        if (!done) {
          deps.logger.warn({ remote: req.socket.remoteAddress }, 'console login refused: wrong token');
          return page(401, undefined, (ctx) =>
            h(Login, { ctx, next: field(form, 'next', 2048), failed: true, proxyOnly: access.proxyOnly }),
          );
        }
        deps.logger.info({ user: done.session.identity.name, role: done.session.identity.role }, 'console login');
        return redirect(res, safeNext(field(form, 'next', 2048)), [done.cookie]);
      }
    }

    const session = who.session;
    if (!session) {
      if (method === 'GET' && !who.proxyMissing) return redirect(res, urls.login(`${url.pathname}${url.search}`), cookies);
      return page(401, undefined, (ctx) => h(Login, { ctx, next: undefined, failed: false, proxyOnly: access.proxyOnly }));
    }
    const identity = session.identity;

    if (method === 'POST') {
      let form: URLSearchParams;
      try {
        form = await readForm(req);
      } catch (err) {
        return page(statusOf(err), session, (ctx) => h(Message, { ctx, title: 'Refused', text: (err as Error).message }), cookies);
      }
      if (!access.csrfOk(session, form.get('_csrf')))
        return page(
          403,
          session,
          (ctx) =>
            h(Message, {
              ctx,
              title: 'Refused',
              text: 'This form is stale or did not come from this console. Load the page again and retry.',
            }),
          cookies,
        );
      if (parts[0] === 'logout' && parts.length === 1) return redirect(res, urls.login(), [access.logout(req, session)]);
      if (identity.role !== 'operator')
        return page(
          403,
          session,
          (ctx) => h(Message, { ctx, title: 'Not allowed', text: 'Only operators can do that; you are a viewer.' }),
          cookies,
        );
      return act(parts, form, session, cookies);
    }
    if (method !== 'GET') {
      res.setHeader('Allow', 'GET, HEAD, POST');
      return page(
        405,
        session,
        (ctx) => h(Message, { ctx, title: 'Method not allowed', text: 'The console answers GET and POST.' }),
        cookies,
      );
    }
    return view(parts, url.searchParams, session, cookies);

    async function act(p: string[], form: URLSearchParams, s: Session, c: string[]): Promise<void> {
      const done = (to: string, message: string): void => {
        s.flash = message;
        redirect(res, to, c);
      };
      try {
        if (p[0] === 'events' && p.length === 3 && p[2] === 'replay')
          return done(urls.event(p[1]!), await actions.replayOne(s.identity, p[1]!));
        if (p[0] === 'events' && p.length === 3 && p[2] === 'reveal') {
          await actions.reveal(s.identity, p[1]!);
          s.revealed.set(p[1]!, deps.clock.now() + REVEAL_MS);
          return done(urls.event(p[1]!), 'Personal data of this event is shown for the next 10 minutes; the reveal is in the audit log.');
        }
        if (p[0] === 'replay' && p.length === 1) {
          const { filter, description } = replayFilter(readInboxQuery(form), deps.clock.now());
          const expected = form.get('expected');
          const message = await actions.replayFiltered(s.identity, filter, description, expected === null ? undefined : Number(expected));
          return done(urls.inbox(inboxQueryOf(readInboxQuery(form))), message);
        }
        if (p[0] === 'gaps' && p.length === 3 && p[2] === 'ignore') {
          const id = parseId(p[1]);
          const reason = field(form, 'reason', 500);
          if (id === undefined || reason === undefined || reason.length < 3)
            return done(urls.gap(p[1]!), 'Say why the gap needs no recovery, in a few words.');
          return done(urls.gap(id), await actions.ignoreGap(s.identity, id, reason));
        }
        if (p[0] === 'reconcile' && p.length === 1) return done(urls.runs(), await actions.reconcileNow(s.identity));
      } catch (err) {
        if (err instanceof FilterError) return done(urls.inbox(), err.message);
        if (isPostroomError(err) && ['not_found', 'replay_refused', 'replay_conflict'].includes(err.code))
          return done(p[0] === 'events' ? urls.event(p[1]!) : urls.overview(), err.message);
        throw err;
      }
      return page(404, s, (ctx) => h(Message, { ctx, title: 'Not found', text: 'No such action.' }), c);
    }

    async function view(p: string[], q: URLSearchParams, s: Session, c: string[]): Promise<void> {
      const show = (status: number, el: (ctx: PageContext) => JSXNode): Promise<void> => page(status, s, el, c);
      const notFound = (text: string): Promise<void> => show(404, (ctx) => h(Message, { ctx, title: 'Not found', text }));
      try {
        if (p.length === 0) {
          const data = await loadOverview(db, deps.clock, deps.panels, deps.reconcileUnavailable);
          return show(200, (ctx) => h(Overview, { ctx, data }));
        }
        if (p[0] === 'inbox' && p.length === 1) return inbox(q, show);
        if (p[0] === 'events' && p.length === 2) {
          const id = p[1]!;
          const until = s.revealed.get(id);
          const revealed = until !== undefined && until > deps.clock.now() && s.identity.role === 'operator';
          const data = await loadEvent(db, id, { revealed, holdSeconds: deps.orderingHoldSeconds, now: deps.clock.now() });
          if (!data) return notFound(`No event ${id} in the inbox.`);
          return show(200, (ctx) => h(EventView, { ctx, data }));
        }
        if (p[0] === 'correspondence' && p.length === 2) {
          const data = await loadTimeline(db, p[1]!);
          return show(200, (ctx) => h(Timeline, { ctx, data }));
        }
        if (p[0] === 'gaps' && p.length === 1) {
          const raw = field(q, 'status');
          const status = raw !== undefined && (GAP_STATUSES as readonly string[]).includes(raw) ? (raw as GapStatus) : undefined;
          const before = parseId(field(q, 'before'));
          const gaps = await pageGaps(db, { status, before, limit: PAGE + 1 });
          const next = gaps.length > PAGE ? gaps[PAGE - 1]!.gap_id : undefined;
          return show(200, (ctx) => h(Gaps, { ctx, status, gaps: gaps.slice(0, PAGE), next, paged: before !== undefined }));
        }
        if (p[0] === 'gaps' && p.length === 2) {
          const id = parseId(p[1]);
          const gap = id === undefined ? undefined : await getGap(db, String(id));
          if (!gap) return notFound(`No gap ${p[1]}.`);
          return show(200, (ctx) => h(GapView, { ctx, gap }));
        }
        if (p[0] === 'runs' && p.length === 1) {
          const before = parseId(field(q, 'before'));
          const runs = await listRuns(db, { before, limit: PAGE + 1 });
          const next = runs.length > PAGE ? runs[PAGE - 1]!.run_id : undefined;
          return show(200, (ctx) =>
            h(Runs, { ctx, runs: runs.slice(0, PAGE), next, paged: before !== undefined, unavailable: deps.reconcileUnavailable }),
          );
        }
        if (p[0] === 'runs' && p.length === 2) {
          const id = parseId(p[1]);
          const run = id === undefined ? undefined : await getRun(db, id);
          if (!run) return notFound(`No reconcile run ${p[1]}.`);
          return show(200, (ctx) => h(RunView, { ctx, run }));
        }
        if (p[0] === 'audit' && p.length === 1) {
          const before = parseId(field(q, 'before'));
          const rows = await listAudit(db, { before, limit: PAGE + 1 });
          const next = rows.length > PAGE ? rows[PAGE - 1]!.audit_id : undefined;
          return show(200, (ctx) => h(AuditLog, { ctx, rows: rows.slice(0, PAGE), next, paged: before !== undefined }));
        }
        if (p[0] === 'replay' && p.length === 1) {
          const query = readInboxQuery(q);
          const { filter, description } = replayFilter(query, deps.clock.now());
          const matched = await countReplayable(db, filter);
          return show(200, (ctx) => h(ReplayConfirm, { ctx, preview: { filters: inboxQueryOf(query), description, matched } }));
        }
        if (p[0] === 'find' && p.length === 1) {
          const wanted = field(q, 'q');
          if (wanted === undefined) return redirect(res, urls.inbox(), c);
          if (await getInboxEvent(db, wanted)) return redirect(res, urls.event(wanted), c);
          return redirect(res, urls.correspondence(wanted), c);
        }
      } catch (err) {
        if (err instanceof FilterError) return show(400, (ctx) => h(Message, { ctx, title: 'Bad request', text: err.message }));
        throw err;
      }
      return notFound('No such page.');
    }

    async function inbox(q: URLSearchParams, show: (status: number, el: (ctx: PageContext) => JSXNode) => Promise<void>): Promise<void> {
      const query = readInboxQuery(q);
      const empty: InboxPage = { rows: [], next: null, scanned: 0, windowFull: false };
      let error: string | undefined;
      let result = empty;
      const before = field(q, 'before', 400);
      try {
        result = await pageInbox(db, toBrowseFilter(query, deps.clock.now()), parseCursor(before), PAGE);
      } catch (err) {
        if (!(err instanceof FilterError)) throw err;
        error = err.message;
      }
      return show(error ? 400 : 200, (ctx) => h(Inbox, { ctx, query, page: result, error, paged: before !== undefined }));
    }
  }
}
