/**
 * Counts work still in flight (pending deliveries, queued sends) so tests and the
 * traffic generator can wait until the sandbox has nothing left to do.
 */
export interface Activity {
  begin(): void;
  end(): void;
  readonly busy: number;
  /** Resolves once nothing is in flight; rejects after `timeoutMs`. */
  idle(timeoutMs?: number): Promise<void>;
}

export function createActivity(): Activity {
  let busy = 0;
  let waiters: Array<() => void> = [];
  return {
    begin() {
      busy++;
    },
    end() {
      busy = Math.max(0, busy - 1);
      if (busy === 0 && waiters.length > 0) {
        const w = waiters;
        waiters = [];
        for (const resolve of w) resolve();
      }
    },
    get busy() {
      return busy;
    },
    idle(timeoutMs = 30_000) {
      if (busy === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== done);
          reject(new Error(`sandbox still busy after ${timeoutMs} ms (${busy} item(s) in flight)`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          resolve();
        };
        waiters.push(done);
      });
    },
  };
}

/** Timers that all stop with the sandbox, and never keep a process alive on their own. */
export interface Timers {
  set(fn: () => void, ms: number): void;
  clearAll(): void;
}

export function createTimers(): Timers {
  const live = new Set<NodeJS.Timeout>();
  return {
    set(fn, ms) {
      const t = setTimeout(
        () => {
          live.delete(t);
          fn();
        },
        Math.max(0, ms),
      );
      t.unref();
      live.add(t);
    },
    clearAll() {
      for (const t of live) clearTimeout(t);
      live.clear();
    },
  };
}
