import { migrationStatus, type MigrationFile } from '../db/migrate.js';
import type { Db } from '../db/types.js';
import { describeError } from '../errors.js';
import type { Logger } from '../logging/logger.js';

/**
 * `serve --no-migrate` leaves migrations to a separate step (deploy/k8s/migrate-job.yaml), which
 * may finish after the new pods start. A worker or reconciler of this build run against the
 * previous schema would fail every statement that names what the new migrations add: each event's
 * attempt would fail and be retried, and past its attempts go dead, for want of one `postroom
 * migrate`. So with --no-migrate they start only once the store has every migration this build
 * knows. Ingress and the probes serve meanwhile, and /readyz says what is pending.
 */
export interface SchemaGate {
  /** Resolves once the components were started, or the gate was stopped first; rejects if starting them failed. */
  readonly done: Promise<void>;
  /** What /readyz reports: waiting, started, or why starting failed. */
  state(): { ok: boolean; detail?: string };
  /** Stops waiting; components not started yet never start. */
  stop(): void;
}

export interface SchemaGateOptions {
  db: Db;
  logger: Logger;
  /** Starts what waits for the schema; called at most once. */
  start: () => Promise<void>;
  /** Between checks of the store (default 2 s). */
  intervalMs?: number;
  /** Between repeats of the warning while waiting (default 30 s). */
  warnEveryMs?: number;
  migrationsDir?: string;
  /**
   * What the caller's own check found pending: /readyz names it from the first probe,
   * not only after the gate's first check of the store.
   */
  pending?: readonly MigrationFile[];
}

const namesOf = (pending: readonly MigrationFile[]): string[] => pending.map((f) => `${String(f.version).padStart(3, '0')}_${f.name}`);

function pendingState(pending: readonly MigrationFile[]): { ok: false; detail: string } {
  const names = namesOf(pending);
  return { ok: false, detail: `${names.length} migration(s) pending (${names.join(', ')}); run \`postroom migrate\`` };
}

export function createSchemaGate(options: SchemaGateOptions): SchemaGate {
  const intervalMs = options.intervalMs ?? 2000;
  const warnEveryMs = options.warnEveryMs ?? 30_000;
  let stopped = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let state: { ok: boolean; detail?: string } = options.pending?.length
    ? pendingState(options.pending)
    : { ok: false, detail: 'waiting for the store to have this build’s migrations' };

  const pause = (): Promise<void> =>
    new Promise((resolve) => {
      // stop() during a check of the store found no pause to cut short.
      if (stopped) return resolve();
      wake = resolve;
      timer = setTimeout(resolve, intervalMs);
    });

  const done = (async () => {
    let warnedAt = -Infinity;
    for (;;) {
      if (stopped) return;
      try {
        const status = await migrationStatus(options.db, options.migrationsDir);
        if (status.current) break;
        state = pendingState(status.pending);
        if (Date.now() - warnedAt >= warnEveryMs) {
          warnedAt = Date.now();
          options.logger.warn(
            { pending: namesOf(status.pending) },
            'the store lacks migrations this build needs: run `postroom migrate`; the worker and reconciler start once they are applied',
          );
        }
      } catch (err) {
        // A checksum mismatch or an unreachable store: keep waiting, and say so where on-call looks.
        state = { ok: false, detail: `cannot read the store's migrations: ${describeError(err)}` };
        if (Date.now() - warnedAt >= warnEveryMs) {
          warnedAt = Date.now();
          options.logger.warn({ err }, 'could not read the store’s migrations; checking again');
        }
      }
      await pause();
    }
    if (stopped) return;
    options.logger.info('the store has every migration this build needs: starting the worker and reconciler');
    try {
      await options.start();
      state = { ok: true };
    } catch (err) {
      state = { ok: false, detail: `starting after migrations failed: ${describeError(err)}` };
      throw err;
    }
  })();

  return {
    done,
    state: () => state,
    stop() {
      stopped = true;
      clearTimeout(timer);
      wake?.();
    },
  };
}
