import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAckDeadline, type AckRace, type Settle } from '../../src/ingress/ack-deadline.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}
/** The race's answer as a promise, for the assertions (ingress takes it as a call). */
const asPromise =
  (race: AckRace) =>
  <T>(start: (settle: Settle<T>) => void): Promise<T | 'timeout'> =>
    new Promise((resolve, reject) => race(start, resolve, reject));

/** Work that reports through the entry as the inbox writer does, when a promise settles. */
const reportsWhen =
  <T>(promise: Promise<T>) =>
  (settle: Settle<T>): void => {
    promise.then(
      (v) => settle.resolve(v),
      (e: unknown) => settle.reject(e),
    );
  };

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The property both runs check: each request gets the earlier of its write and its own deadline, at that moment. */
async function checkRaces(requests: Array<{ arriveAfter: number; takes: number | undefined }>, budget: number): Promise<void> {
  vi.useFakeTimers();
  const t0 = Date.now();
  const race = asPromise(createAckDeadline(budget, () => Date.now()));
  const results: Array<{ value: unknown; at: number } | undefined> = requests.map(() => undefined);
  const arrivals: number[] = [];
  for (const [i, r] of requests.entries()) {
    await vi.advanceTimersByTimeAsync(r.arriveAfter);
    arrivals.push(Date.now() - t0);
    const write = deferred<string>();
    // A write that never finishes (undefined) is the store hanging.
    if (r.takes !== undefined) setTimeout(() => write.resolve(`done ${i}`), r.takes);
    void race(reportsWhen(write.promise)).then((value) => (results[i] = { value, at: Date.now() - t0 }));
  }
  await vi.advanceTimersByTimeAsync(3000);
  for (const [i, r] of requests.entries()) {
    const finishes = r.takes === undefined ? Infinity : arrivals[i]! + r.takes;
    const deadline = arrivals[i]! + budget;
    // A write finishing at its deadline's very moment may go either way; nothing else may.
    if (finishes === deadline) expect(results[i]!.at).toBe(deadline);
    else if (finishes < deadline) expect(results[i]).toEqual({ value: `done ${i}`, at: finishes });
    else expect(results[i]).toEqual({ value: 'timeout', at: deadline });
  }
  expect(vi.getTimerCount()).toBe(0);
}

describe('the ack budget on one timer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers each request with its write, or with timeout exactly one budget after it arrived', async () => {
    const race = asPromise(createAckDeadline(1000, () => Date.now()));
    const settled: Array<[string, unknown, number]> = [];
    const start = Date.now();
    const track = (name: string, p: Promise<unknown>) =>
      p.then(
        (v) => settled.push([name, v, Date.now() - start]),
        (e: unknown) => settled.push([name, (e as Error).message, Date.now() - start]),
      );

    const a = deferred<string>();
    void track('a', race(reportsWhen(a.promise)));
    await vi.advanceTimersByTimeAsync(100);
    const b = deferred<string>();
    void track('b', race(reportsWhen(b.promise)));
    await vi.advanceTimersByTimeAsync(150);
    const c = deferred<string>();
    void track('c', race(reportsWhen(c.promise)));
    const d = deferred<string>();
    void track('d', race(reportsWhen(d.promise)));

    await vi.advanceTimersByTimeAsync(50); // t = 300
    b.resolve('accepted');
    d.reject(new Error('store down'));
    await vi.advanceTimersByTimeAsync(0);
    // One timer serves them all.
    expect(vi.getTimerCount()).toBe(1);

    await vi.advanceTimersByTimeAsync(699); // t = 999: nothing has run out yet
    expect(settled).toEqual([
      ['b', 'accepted', 300],
      ['d', 'store down', 300],
    ]);
    await vi.advanceTimersByTimeAsync(1); // t = 1000: a's budget
    expect(settled.at(-1)).toEqual(['a', 'timeout', 1000]);
    a.resolve('accepted'); // too late: already answered
    await vi.advanceTimersByTimeAsync(249); // t = 1249
    expect(settled).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1); // t = 1250: c's budget
    expect(settled.at(-1)).toEqual(['c', 'timeout', 1250]);
    expect(vi.getTimerCount()).toBe(0);
    c.reject(new Error('late')); // ignored, and not an unhandled rejection
    await vi.advanceTimersByTimeAsync(10);
    expect(settled).toHaveLength(4);
  });

  it('takes the first report only, even one made before start returns, and a throw from start as a failure', async () => {
    const race = asPromise(createAckDeadline(1000, () => Date.now()));
    // The writer, closed, reports before enqueue returns; and reporting twice changes nothing.
    const early = race<string>((settle) => {
      settle.reject(new Error('writer is closed'));
      settle.resolve('accepted');
    });
    await expect(early).rejects.toThrow('writer is closed');
    let later: Settle<string> | undefined;
    const twice = race<string>((settle) => (later = settle));
    later!.resolve('accepted');
    later!.resolve('duplicate');
    later!.reject(new Error('late'));
    await expect(twice).resolves.toBe('accepted');
    const thrown = race<string>(() => {
      throw new Error('enqueue threw');
    });
    await expect(thrown).rejects.toThrow('enqueue threw');
    // Nothing is left waiting for a deadline.
    await vi.advanceTimersByTimeAsync(1000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps every later deadline when an answer throws', async () => {
    const race = createAckDeadline(1000, () => Date.now());
    const answers: string[] = [];
    race(
      () => undefined,
      () => {
        throw new Error('the answer failed');
      },
      () => undefined,
    );
    await vi.advanceTimersByTimeAsync(10);
    race(
      () => undefined,
      (r) => answers.push(`second ${String(r)}`),
      () => undefined,
    );
    // The first entry's answer throws out of the timer; the second still gets its own deadline.
    await expect(vi.advanceTimersByTimeAsync(1000)).rejects.toThrow('the answer failed');
    await vi.advanceTimersByTimeAsync(20);
    expect(answers).toEqual(['second timeout']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('gives every request the earlier of its write and its own deadline, whatever the arrivals and finishes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ arriveAfter: fc.nat(300), takes: fc.option(fc.nat(1500), { nil: undefined }) }), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 1000 }),
        checkRaces,
      ),
      { numRuns: 150 },
    );
  });

  it('holds the same with hundreds in flight, where settled entries are cut from the front of the queue', async () => {
    // More than 64 settled ahead of the head, half the queue or more: the queue is copied from the head on.
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ arriveAfter: fc.nat(5), takes: fc.option(fc.nat(400), { nil: undefined }) }), {
          minLength: 100,
          maxLength: 400,
        }),
        fc.integer({ min: 50, max: 1000 }),
        checkRaces,
      ),
      { numRuns: 30 },
    );
  });
});

describe('what the ack budget keeps', () => {
  it('keeps nothing of a settled write while an older one is still waiting', async () => {
    // Measured in a process of its own with --expose-gc: 200 writes of 1 MB each settle behind one that never does.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-ack-'));
    const script = path.join(dir, 'retained.mts');
    fs.writeFileSync(
      script,
      `import { createAckDeadline } from ${JSON.stringify(path.join(ROOT, 'src/ingress/ack-deadline.ts'))};
       const race = createAckDeadline(600_000);
       const ignore = () => undefined;
       race(() => undefined, ignore, ignore);
       for (let i = 0; i < 200; i++) {
         await new Promise((resolve, reject) =>
           race((settle) => void Promise.resolve().then(() => settle.resolve(Buffer.alloc(1_000_000, 1))), resolve, reject),
         );
       }
       globalThis.gc!();
       await new Promise((r) => setTimeout(r, 20));
       globalThis.gc!();
       console.log(process.memoryUsage().arrayBuffers);`,
    );
    try {
      const { stdout } = await run(process.execPath, ['--expose-gc', '--import', 'tsx', script], { cwd: ROOT });
      // Were settled entries to keep their answers, every one of the 200 MB would still be reachable from the queue.
      expect(Number(stdout.trim())).toBeLessThan(20_000_000);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
