/**
 * The ack budget for every request of an ingress, on one timer.
 *
 * A timer per request would be a Timeout object and two updates of Node's timer
 * lists for each, about 1 µs of a request's ~35 µs of process CPU (bench/cpu.ts).
 * Every request has the same budget, so their deadlines come in the order they
 * arrive: a queue in arrival order, with one timer armed for the oldest
 * unanswered one, gives each the same answer at the same moment.
 */

/** Told once of the raced work's result (later calls are ignored). */
export interface Settle<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

/**
 * Starts the work with the entry that races it, and calls `done` with the work's result, or with 'timeout' once
 * the budget has passed, whichever comes first (`fail` for the work's failure). The entry is itself what the work
 * reports to (the inbox writer takes it as its sink), and the answer is a call, not a promise: when a flush
 * commits, each of its requests is answered right there, in the writer's loop.
 */
export type AckRace = <T>(start: (settle: Settle<T>) => void, done: (result: T | 'timeout') => void, fail: (err: unknown) => void) => void;

/** One request's place in the queue: its deadline, and how to answer it until it is answered. */
class Pending<T> implements Settle<T> {
  settled = false;
  /**
   * Cleared once settled. A settled entry waits in the queue until every older one has settled too, and
   * these hold the request's answer, and through it the request: kept, every request behind one slow
   * write at the head would stay reachable until that write ended, and in steady load enough of them
   * would live into V8's old generation to double the collector's work per event (bench/instructions.ts
   * counts the collector's instructions apart).
   */
  private done: ((value: T | 'timeout') => void) | undefined;
  private fail: ((err: unknown) => void) | undefined;

  constructor(
    readonly deadline: number,
    private readonly onSettled: (p: Pending<T>) => void,
    done: (value: T | 'timeout') => void,
    fail: (err: unknown) => void,
  ) {
    this.done = done;
    this.fail = fail;
  }

  resolve(value: T): void {
    const done = this.take();
    done?.(value);
  }

  reject(err: unknown): void {
    const fail = this.fail;
    if (this.take()) fail!(err);
  }

  expire(): void {
    this.take()?.('timeout');
  }

  /** The answer for the first of the work and the deadline, and nothing for a later one (a late write is dropped). */
  private take(): ((value: T | 'timeout') => void) | undefined {
    if (this.settled) return undefined;
    this.settled = true;
    const done = this.done;
    this.done = undefined;
    this.fail = undefined;
    this.onSettled(this);
    return done;
  }
}

/** Answers each raced piece of work with its result, or 'timeout' once `budgetMs` has passed, whichever comes first. */
export function createAckDeadline(budgetMs: number, now: () => number = () => performance.now()): AckRace {
  // A queue with a moving head: shift() on a long array copies it.
  let queue: Array<Pending<unknown>> = [];
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

  const onSettled = (p: Pending<unknown>): void => {
    if (queue[head] === p) dropSettled();
  };

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
    try {
      while (head < queue.length && queue[head]!.deadline <= t) queue[head++]!.expire();
    } finally {
      // An answer that throws must not leave every later request without its deadline.
      dropSettled();
      arm();
    }
  }

  return <T>(start: (settle: Settle<T>) => void, done: (result: T | 'timeout') => void, fail: (err: unknown) => void) => {
    const p = new Pending<T>(now() + budgetMs, onSettled as (p: Pending<T>) => void, done, fail);
    queue.push(p as Pending<unknown>);
    arm();
    try {
      start(p);
    } catch (err) {
      p.reject(err);
    }
  };
}
