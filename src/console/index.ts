import type http from 'node:http';
import { systemClock, type Clock } from '../clock.js';
import type { ConsoleConfig } from '../config/config.js';
import type { Db } from '../db/types.js';
import type { Logger } from '../logging/logger.js';
import { createAccess } from './access.js';
import { createActions, type ReconcileNow } from './actions.js';
import { OVERVIEW_PANELS, type PanelSource } from './panels.js';
import { createRouter } from './router.js';
import { BASE } from './urls.js';

export { CONSOLE_ROLES, type ConsoleRole } from './auth/tokens.js';
export { listAudit, type ConsoleAuditRow } from './audit-queries.js';
export type { ReconcileNow } from './actions.js';

export interface ConsoleOptions {
  db: Db;
  logger: Logger;
  config: ConsoleConfig;
  /** POSTROOM_ORDERING_HOLD_SECONDS, to say whether an earlier event holds one back. */
  orderingHoldSeconds: number;
  reconcile: ReconcileNow;
  clock?: Clock;
  /** `postroom console`: a token made for this run, logged in as an operator named after the local user. */
  localLogin?: { name: string; token: string };
  /** The overview's table panels (default OVERVIEW_PANELS). */
  panels?: readonly PanelSource[];
}

export interface Console {
  /** Answers /console and every path under it (true); leaves every other path to the listener (false). */
  handle(req: http.IncomingMessage, res: http.ServerResponse): boolean;
  /** Stops a reconcile run it started and waits for it. */
  close(): Promise<void>;
}

/**
 * The on-call console: server-rendered pages over the inbox, gaps, reconcile runs and correspondences,
 * and the few actions on-call needs (replay, ignore a gap, reconcile now), each recorded in the audit
 * log. Served on the admin listener only (src/app/console-listener.ts); docs/console.md.
 */
export function createConsole(options: ConsoleOptions): Console {
  const clock = options.clock ?? systemClock;
  const access = createAccess({ config: options.config, clock, ...(options.localLogin ? { localLogin: options.localLogin } : {}) });
  const actions = createActions({ db: options.db, logger: options.logger, reconcile: options.reconcile });
  const route = createRouter({
    db: options.db,
    logger: options.logger,
    clock,
    access,
    actions,
    orderingHoldSeconds: options.orderingHoldSeconds,
    panels: options.panels ?? OVERVIEW_PANELS,
    reconcileUnavailable: 'unavailable' in options.reconcile ? options.reconcile.unavailable : undefined,
  });
  return {
    handle(req, res) {
      const path = (req.url ?? '').split('?')[0]!;
      if (path !== BASE && !path.startsWith(`${BASE}/`)) return false;
      route(req, res).catch((err: unknown) => {
        options.logger.error({ err }, 'console request failed');
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Unexpected error.');
        else res.destroy();
      });
      return true;
    },
    close: () => actions.close(),
  };
}
