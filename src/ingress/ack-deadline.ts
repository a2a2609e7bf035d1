/**
 * The ack budget for every request of an ingress, on one timer.
 *
 * Each request used to arm a timer of its own and clear it when its write
 * finished: a Timeout object and two updates of Node's timer lists per request,
 * about 1 µs of its ~35 µs of process CPU (docs/benchmarks-history.md, stop 30). Every
 * request has the same budget, so their deadlines come in the order they arrive:
 * a queue in arrival order, with one timer armed for the oldest unanswered one,
 * gives each the same answer at the same moment.
 */
export type AckRace = <T>(write: Promise<T>) => Promise<T | 'timeout'>;

interface Pending {
  deadline: number;
  settled: boolean;
  /**
   * Cleared once settled. A settled entry waits in the queue until every older one has settled too, and
   * its callback held the request's promises, the write's result among them: behind one slow write at
   * the head, every later request's stayed reachable until that write ended, and in steady load enough
   * of them lived into V8's old generation to double the collector's work per event
   * (bench/instructions.ts, docs/benchmarks.md "stop 34").
   */
  expire: (() => void) | undefined;
}

/** Settles each raced write with its result, or 'timeout' once `budgetMs` has passed, whichever comes first. */
export function createAckDeadline(budgetMs: number, now: () => number = () => performance.now()): AckRace {
  // A queue with a moving head: shift() on a long array copies it.
  let queue: Pending[] = [];
  let head = 0;
  let timer: NodeJS.Timeout | undefined;

  function dropSettled(): void {
    while (head < queue.length && queue[head]!.settled) head++;
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else if (head > 64 && head * 2 > queue.length) {
      // Settled entries ahead of the head go as soon as they are half the array: a copy of at most as many live ones.
      queue = queue.slice(head);
      head = 0;
    }
  }

  function arm(): void {
    if (timer !== undefined || head === queue.length) return;
    timer = setTimeout(fire, Math.max(0, queue[head]!.deadline - now()));
    // An ingress with nothing else to do must still be able to exit.
    timer.unref();
  }

  function fire(): void {
    timer = undefined;
    const t = now();
    dropSettled();
    while (head < queue.length && queue[head]!.deadline <= t) {
      const p = queue[head++]!;
      if (!p.settled) {
        p.settled = true;
        const expire = p.expire;
        p.expire = undefined;
        expire?.();
      }
    }
    dropSettled();
    arm();
  }

  return <T>(write: Promise<T>) =>
    new Promise<T | 'timeout'>((resolve, reject) => {
      const p: Pending = { deadline: now() + budgetMs, settled: false, expire: () => resolve('timeout') };
      queue.push(p);
      arm();
      /** True for the first of the write and the deadline only; a late write is dropped (and never unhandled). */
      const first = (): boolean => {
        if (p.settled) return false;
        p.settled = true;
        p.expire = undefined;
        if (queue[head] === p) dropSettled();
        return true;
      };
      write.then(
        (r) => first() && resolve(r),
        (err: unknown) => first() && reject(err),
      );
    });
}
