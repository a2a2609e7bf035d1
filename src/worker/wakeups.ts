import { WAKE_COALESCE_MS } from './pacing.js';

/** How idle loops are woken: by the inbox notification, a loop that filled its batch, or stop. */
export interface Wakeups {
  /** A wake that found no loop asleep (or quick loops running): the next loop about to sleep claims again instead. */
  pending: boolean;
  /**
   * The inbox notification. One claim per notification, not one per loop: every loop claiming on every
   * flush's notification runs the claim query several times for one flush's events, which under steady
   * ingest costs Postgres more than the events. Notifications are coalesced too: the first after a quiet
   * spell wakes a loop at once, later ones at most every WAKE_COALESCE_MS, so each claim takes the events of
   * several flushes (a claim and its batch cost about the same for 5 events as for 100).
   */
  onNotification(): void;
  /** Wakes one sleeping loop, or leaves the wake pending when none sleeps. */
  wakeOne(): void;
  /** Resolves true when woken (a notification, a full batch, stop) and false when the time ran out. */
  sleep(ms: number): Promise<boolean>;
  /** A wait only stop cuts short: a loop waiting out the claim spacing takes no notification's wake from an idle one. */
  pause(ms: number): Promise<void>;
  /** Cancels a coalesced wake, and wakes every sleeping and pausing loop. */
  wakeEveryLoop(): void;
}

export function createWakeups(moreLoopsWanted: () => boolean): Wakeups {
  const sleepers = new Set<() => void>();
  const pauses = new Set<() => void>();
  let lastNotifiedWake = 0;
  let wakeTimer: NodeJS.Timeout | undefined;
  const wakeups: Wakeups = {
    pending: false,
    onNotification() {
      if (!moreLoopsWanted()) {
        // The running loop claims again when its quick batch ends.
        wakeups.pending = true;
        return;
      }
      if (wakeTimer) return;
      const wait = lastNotifiedWake + WAKE_COALESCE_MS - performance.now();
      if (wait <= 0) {
        lastNotifiedWake = performance.now();
        wakeups.wakeOne();
        return;
      }
      wakeTimer = setTimeout(() => {
        wakeTimer = undefined;
        lastNotifiedWake = performance.now();
        wakeups.wakeOne();
      }, wait);
    },
    wakeOne() {
      const first = sleepers.values().next();
      if (first.done) wakeups.pending = true;
      else first.value();
    },
    sleep: (ms) =>
      new Promise((resolve) => {
        const finish = (woken: boolean): void => {
          clearTimeout(timer);
          sleepers.delete(wake);
          resolve(woken);
        };
        const wake = (): void => finish(true);
        const timer = setTimeout(() => finish(false), ms);
        sleepers.add(wake);
      }),
    pause: (ms) =>
      new Promise((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          pauses.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        pauses.add(done);
      }),
    wakeEveryLoop() {
      clearTimeout(wakeTimer);
      wakeTimer = undefined;
      for (const wake of sleepers) wake();
      for (const done of pauses) done();
    },
  };
  return wakeups;
}
