import type { Db } from '../db/types.js';
import { migrationStatus } from '../db/migrate.js';
import { describeError } from '../errors.js';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export interface Readiness {
  check(): Promise<ReadinessReport>;
  /** After SIGTERM: report not ready so load balancers stop sending. */
  setDraining(): void;
}

/** Ready when not draining, the store answers and its migrations match this build. */
export function createReadiness(db: Db, options: { migrationsDir?: string } = {}): Readiness {
  let draining = false;
  let migrationsCurrent = false;
  return {
    setDraining() {
      draining = true;
    },
    async check() {
      const checks: ReadinessReport['checks'] = {};
      checks.draining = { ok: !draining, ...(draining ? { detail: 'shutting down' } : {}) };
      try {
        await db.query('SELECT 1');
        checks.store = { ok: true };
        // Once current, stays current for this build: skip the file read on every probe.
        if (!migrationsCurrent) {
          const status = await migrationStatus(db, options.migrationsDir);
          migrationsCurrent = status.current;
          checks.migrations = status.current ? { ok: true } : { ok: false, detail: `${status.pending.length} pending; run \`postroom migrate\`` };
        } else {
          checks.migrations = { ok: true };
        }
      } catch (err) {
        checks.store = { ok: false, detail: describeError(err) };
      }
      return { ready: Object.values(checks).every((c) => c.ok), checks };
    },
  };
}
