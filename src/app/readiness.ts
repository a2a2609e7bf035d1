import type { Db } from '../db/types.js';
import { migrationStatus } from '../db/migrate.js';
import { describeError } from '../errors.js';
import { INGRESS_DEFAULTS } from '../ingress/defaults.js';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export interface Readiness {
  check(): Promise<ReadinessReport>;
  /** After SIGTERM: report not ready so load balancers stop sending. */
  setDraining(): void;
}

export interface ReadinessOptions {
  migrationsDir?: string;
  /** The ingress writer, when this process takes webhooks: stuck, it cannot acknowledge anything. */
  writer?: { stalledMs(): number };
  /** The ack budget: the writer may have work without a flush finishing for half of it before this replica is not ready. */
  ackBudgetMs?: number;
  /** The worker and reconciler, when they wait for migrations (schema-gate.ts); undefined when nothing waits. */
  components?: () => { ok: boolean; detail?: string } | undefined;
  /** The whole probe answers within this, whatever the store does (default 800 ms; probes time out at 1 s). */
  timeoutMs?: number;
}

export const DEFAULT_READINESS_TIMEOUT_MS = 800;

/**
 * Ready when not draining, the store answers, its migrations match this build,
 * and the ingress writer is not stuck. Each store check is bounded in time, and a
 * store statement that overruns has its connection abandoned (Db.queryWithin).
 */
export function createReadiness(db: Db, options: ReadinessOptions = {}): Readiness {
  let draining = false;
  let migrationsCurrent = false;
  const timeoutMs = options.timeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS;

  async function storeChecks(checks: ReadinessReport['checks'], deadline: number): Promise<void> {
    try {
      await db.queryWithin(Math.max(1, deadline - Date.now()), 'SELECT 1');
      checks.store = { ok: true };
    } catch (err) {
      checks.store = { ok: false, detail: describeError(err) };
      return;
    }
    // Once current, stays current for this build: skip the file read on every probe.
    if (migrationsCurrent) {
      checks.migrations = { ok: true };
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const status = await Promise.race([
        migrationStatus(db, options.migrationsDir),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('the migration check did not finish in time')), Math.max(1, deadline - Date.now()));
        }),
      ]);
      migrationsCurrent = status.current;
      checks.migrations = status.current
        ? { ok: true }
        : { ok: false, detail: `${status.pending.length} pending; run \`postroom migrate\`` };
    } catch (err) {
      checks.migrations = { ok: false, detail: describeError(err) };
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    setDraining() {
      draining = true;
    },
    async check() {
      const deadline = Date.now() + timeoutMs;
      const checks: ReadinessReport['checks'] = {};
      checks.draining = { ok: !draining, ...(draining ? { detail: 'shutting down' } : {}) };
      if (options.writer) {
        const stalled = options.writer.stalledMs();
        const budget = options.ackBudgetMs ?? INGRESS_DEFAULTS.ackTimeoutMs;
        // Half the budget, so that a probe every few seconds sees a stuck writer before its requests' budgets
        // run out; a flush takes milliseconds, and one hung connection alone does not stall the writer (the
        // next flush starts beside it), so only a writer that cannot finish any flush gets this far.
        checks.writer =
          stalled > budget / 2
            ? {
                ok: false,
                detail: `inbox writer stuck: work pending and no flush finished for ${Math.round(stalled)} ms (ack budget ${budget} ms)`,
              }
            : { ok: true };
      }
      const components = options.components?.();
      if (components) checks.components = components;
      await storeChecks(checks, deadline);
      return { ready: Object.values(checks).every((c) => c.ok), checks };
    },
  };
}
