import type http from 'node:http';
import { jsx, type FC, type JSXNode } from 'hono/jsx';
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import type { Logger } from '../logging/logger.js';
import type { Access } from './access.js';
import type { Actions } from './actions.js';
import { ASSET_VERSION } from './assets.js';
import type { Session } from './auth/sessions.js';
import { sendHtml } from './http.js';
import type { PanelSource } from './panels.js';
import type { PageContext } from './views/layout.js';
import { Message } from './views/pages.js';

/** What the router, its views and its actions work with (src/console/index.ts builds it). */
export interface RouterDeps {
  db: Db;
  logger: Logger;
  clock: Clock;
  access: Access;
  actions: Actions;
  orderingHoldSeconds: number;
  panels: readonly PanelSource[];
  reconcileUnavailable: string | undefined;
}

/** A page, rendered from what every page knows about the request when it is sent. */
export type Element = (ctx: PageContext) => JSXNode;

/** An element of a component with its props (the router is plain TypeScript; the views are JSX). */
export const h = <P extends object>(component: FC<P>, props: P): JSXNode => jsx(component as FC, props as Record<string, unknown>);

/** The page that says one thing: a title and a sentence. */
export const message =
  (title: string, text: string): Element =>
  (ctx) =>
    h(Message, { ctx, title, text });

/** Who is looking and the session's CSRF token; the flash message is taken from the session as it is shown, once. */
function pageContext(session: Session | undefined): PageContext {
  const flash = session?.flash;
  if (session) session.flash = undefined;
  return { identity: session?.identity, csrf: session?.csrf, flash, assetVersion: ASSET_VERSION };
}

async function sendPage(
  res: http.ServerResponse,
  status: number,
  session: Session | undefined,
  element: Element,
  cookies: string[],
): Promise<void> {
  sendHtml(res, status, `<!doctype html>${await element(pageContext(session)).toString()}`, cookies);
}

/**
 * A page shown as to nobody: no identity, no CSRF token, no flash message, no cookie. A bad address, a
 * refusal before anyone is known, and the login form (even to a browser that has a session).
 */
export function nobodysPage(res: http.ServerResponse, status: number, element: Element): Promise<void> {
  return sendPage(res, status, undefined, element, []);
}

/** One request to the console, read once: where it goes, who sent it, and how to answer it with a page. */
export interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  /** HEAD is routed as GET (the answer leaves its body out). */
  method: string | undefined;
  /** The path under /console, split into its decoded segments. */
  parts: string[];
  session: Session | undefined;
  /** Cookies to set with the answer: a session the proxy's user header has just opened. */
  cookies: string[];
  /** Answers with a page as the session sees it (its flash message shown, once), setting `cookies`. */
  page(status: number, element: Element): Promise<void>;
}

/** An exchange with a logged-in session: the only kind the views and the actions see. */
export type SignedIn = Exchange & { session: Session };

export function openExchange(request: Omit<Exchange, 'page'>): Exchange {
  const exchange: Exchange = {
    ...request,
    page: (status, element) => sendPage(exchange.res, status, exchange.session, element, exchange.cookies),
  };
  return exchange;
}

export const isSignedIn = (x: Exchange): x is SignedIn => x.session !== undefined;

/**
 * Handlers keyed by their path under /console, `:id` standing for any one segment (`/events/:id/replay`).
 * A segment is compared whole, after decoding: `/events%2Fx` is one segment and matches no route.
 */
export type Routes<H> = Readonly<Record<string, H>>;

export function findRoute<H>(routes: Routes<H>, parts: readonly string[]): H | undefined {
  for (const [route, handler] of Object.entries(routes)) {
    const pattern = route.split('/').filter((s) => s !== '');
    if (pattern.length === parts.length && pattern.every((s, i) => s === ':id' || s === parts[i])) return handler;
  }
  return undefined;
}
