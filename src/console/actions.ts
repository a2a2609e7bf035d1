import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import type { ReplayFilter } from '../inbox/admin-queries.js';
import type { Logger } from '../logging/logger.js';
import { ignoreGap } from '../reconciler/gap-queries.js';
import { currentRun } from '../reconciler/state-queries.js';
import { replayEvent, replayMatching } from '../worker/replay.js';
import { finishAudit, recordAudit, replayEventEntry } from './audit-queries.js';
import type { Identity } from './auth/tokens.js';
import type { RunResult } from '../reconciler/reconcile.js';

/** How "Reconcile now" runs: a reconciler behind the cluster-wide lock, or why there is none here. */
export type ReconcileNow = { run(signal: AbortSignal): Promise<RunResult> } | { unavailable: string };

/**
 * The console's actions, each through the same function the CLI uses (src/worker/replay.ts,
 * src/reconciler/gap-queries.ts, the reconciler behind its lock), and each recorded in console_audit:
 * who, when, what, how many. Each returns the sentence to show the operator.
 */
export interface Actions {
  replayOne(who: Identity, eventId: string): Promise<string>;
  replayFiltered(who: Identity, filter: ReplayFilter, description: string, expected: number | undefined): Promise<string>;
  ignoreGap(who: Identity, gapId: number, reason: string): Promise<string>;
  reconcileNow(who: Identity): Promise<string>;
  reveal(who: Identity, eventId: string): Promise<void>;
  close(): Promise<void>;
}

export function createActions(deps: { db: Db; logger: Logger; reconcile: ReconcileNow }): Actions {
  const { db, logger } = deps;
  let running: Promise<void> | undefined;
  const abort = new AbortController();

  return {
    async replayOne(who, eventId) {
      const result = await replayEvent(db, eventId);
      await recordAudit(db, who, replayEventEntry(eventId, result));
      return result.outcome === 'replayed'
        ? `Replayed ${eventId} (was ${result.from_status}): a worker picks it up now.`
        : `${eventId} is still invalid and stays quarantined: ${result.reason}`;
    },

    async replayFiltered(who, filter, description, expected) {
      const summary = await replayMatching(db, filter);
      await recordAudit(db, who, {
        action: 'replay_matching',
        target: description,
        affected: summary.replayed,
        detail: {
          filter: { ...filter, since: filter.since?.toISOString(), until: filter.until?.toISOString() },
          shown_before_confirming: expected ?? null,
          matched: summary.matched,
          still_invalid: summary.still_invalid,
        },
      });
      return `Replayed ${summary.replayed} of ${summary.matched} ${description}${summary.still_invalid ? `; ${summary.still_invalid} still invalid and left quarantined` : ''}.`;
    },

    async ignoreGap(who, gapId, reason) {
      const gap = await ignoreGap(db, gapId, `${reason} (ignored by ${who.name} in the console)`);
      if (!gap) return `Gap #${gapId} is not open any more; nothing changed.`;
      await recordAudit(db, who, { action: 'ignore_gap', target: String(gapId), affected: 1, detail: { reason, event_id: gap.event_id } });
      return `Gap #${gapId} ignored.`;
    },

    async reconcileNow(who) {
      if ('unavailable' in deps.reconcile) return deps.reconcile.unavailable;
      if (running) return 'A reconcile run started from this console is still going; see Reconcile runs.';
      const held = await currentRun(db);
      if (held) return `Another replica is reconciling (${held.holder ?? 'unknown'}, run #${held.run_id}); nothing started.`;
      const auditId = await recordAudit(db, who, { action: 'reconcile', detail: { started: true } });
      const reconciler = deps.reconcile;
      running = reconciler
        .run(abort.signal)
        .then(
          (result) =>
            finishAudit(
              db,
              auditId,
              result.ran ? result.summary.gaps_found : 0,
              result.ran
                ? { outcome: result.summary.outcome, run_id: result.summary.run_id, gaps_open: result.summary.gaps_open }
                : { outcome: 'not_leader', holder: result.holder?.holder ?? null },
            ),
          (err: unknown) => {
            logger.error({ err }, 'reconcile run started from the console failed');
            return finishAudit(db, auditId, null, { outcome: 'failed', error: describeError(err).slice(0, 300) });
          },
        )
        .catch((err: unknown) => logger.error({ err }, 'could not record how a reconcile run ended'))
        .finally(() => {
          running = undefined;
        });
      return 'Reconcile started: it runs under the same lock as every replica’s schedule. Its run appears under Reconcile runs.';
    },

    async reveal(who, eventId) {
      await recordAudit(db, who, { action: 'reveal', target: eventId, affected: 1 });
    },

    async close() {
      abort.abort(new Error('shutting down'));
      await running;
    },
  };
}
