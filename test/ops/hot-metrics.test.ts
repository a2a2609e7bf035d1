import fc from 'fast-check';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotGauge, HotHistogram } from '../../src/metrics/hot.js';

const BUCKETS = [0.001, 0.005, 0.01, 0.5, 1, 5];
const LABEL_SETS = [{ outcome: 'accepted' }, { outcome: 'duplicate' }, { outcome: 'invalid_signature' }] as const;

/**
 * Values on and just above every bound, beyond the last, and zero: where a bucket search goes wrong.
 * Durations and absolute skews, so never negative (a negative one would let sums cancel, and the
 * comparison of sums below would then measure rounding, not the fold).
 */
const value = fc.oneof(
  fc.constantFrom(...BUCKETS, 0, 6, 1e9),
  fc.constantFrom(...BUCKETS).map((b) => b * (1 + Number.EPSILON)),
  fc.double({ min: 0, max: 10, noNaN: true }),
);

type Step =
  { kind: 'hot'; set: number; value: number } | { kind: 'direct'; set: number; value: number } | { kind: 'scrape' } | { kind: 'reset' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('hot' as const), set: fc.nat(LABEL_SETS.length - 1), value }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('direct' as const), set: fc.nat(LABEL_SETS.length - 1), value }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'scrape' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
);

/**
 * A scrape as Prometheus reads it: a set of samples, order aside. A _sum may differ in its last bits
 * (a hot child adds its values up before the series does, and floating-point addition in another
 * order rounds differently), so it is compared within a relative 1e-12; counts and buckets exactly.
 */
async function expectSameScrape(hot: Registry, plain: Registry): Promise<void> {
  const parse = async (r: Registry) =>
    new Map(
      (await r.metrics())
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))] as const),
    );
  const [h, p] = [await parse(hot), await parse(plain)];
  expect([...h.keys()].sort()).toEqual([...p.keys()].sort());
  for (const [series, v] of p) {
    if (/_sum(\{|$)/.test(series)) expect(Math.abs(h.get(series)! - v)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(v)));
    else expect(h.get(series)).toBe(v);
  }
}

/** Plays the steps: observations go to both sides through `record`, resets to both, and every scrape must agree. */
async function play(
  steps: readonly Step[],
  registries: { hot: Registry; plain: Registry },
  metrics: ReadonlyArray<{ reset(): void }>,
  record: (step: Extract<Step, { set: number }>) => void,
): Promise<void> {
  for (const s of steps) {
    if (s.kind === 'scrape') await expectSameScrape(registries.hot, registries.plain);
    else if (s.kind === 'reset') for (const m of metrics) m.reset();
    else record(s);
  }
  await expectSameScrape(registries.hot, registries.plain);
}

describe('hot metrics', () => {
  it('a hot histogram exposes exactly what prom-client shows for the same observations, scrapes and resets in between', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), fc.boolean(), async (steps, labelled) => {
        const plainRegistry = new Registry();
        const hotRegistry = new Registry();
        const config = { name: 'x_seconds', help: 'x', buckets: BUCKETS, labelNames: labelled ? ['outcome'] : [] };
        const plain = new Histogram({ ...config, registers: [plainRegistry] });
        const hot = new HotHistogram({ ...config, registers: [hotRegistry] });
        const labelsOf = (set: number) => (labelled ? { ...LABEL_SETS[set]! } : {});
        await play(steps, { hot: hotRegistry, plain: plainRegistry }, [plain, hot], (s) => {
          plain.observe(labelsOf(s.set), s.value);
          if (s.kind === 'hot') hot.hot(labelsOf(s.set)).observe(s.value);
          else hot.observe(labelsOf(s.set), s.value);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a hot counter exposes exactly what prom-client shows for the same increments', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const plainRegistry = new Registry();
        const hotRegistry = new Registry();
        const config = { name: 'x_total', help: 'x', labelNames: ['outcome'] };
        const plain = new Counter({ ...config, registers: [plainRegistry] });
        const hot = new HotCounter({ ...config, registers: [hotRegistry] });
        await play(steps, { hot: hotRegistry, plain: plainRegistry }, [plain, hot], (s) => {
          const labels = { ...LABEL_SETS[s.set]! };
          // A hot child's series exists from its first use, at zero: the plain side makes it the same way.
          if (s.kind === 'hot') {
            plain.inc(labels, 0);
            plain.inc(labels);
            hot.hot(labels).inc();
          } else {
            plain.inc(labels);
            hot.inc(labels);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a hot gauge exposes exactly what prom-client shows for the same sets, direct sets, increments and resets', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const plainRegistry = new Registry();
        const hotRegistry = new Registry();
        const config = { name: 'x_seconds', help: 'x' };
        const plain = new Gauge({ ...config, registers: [plainRegistry] });
        const hot = new HotGauge({ ...config, registers: [hotRegistry] });
        const child = hot.hot();
        // The last call wins, whichever way it came: the steps mix the hot child with direct set, inc and dec.
        await play(steps, { hot: hotRegistry, plain: plainRegistry }, [plain, hot], (s) => {
          const value = s.set === 0 ? -s.value : s.value;
          if (s.kind === 'hot') {
            plain.set(value);
            child.set(value);
          } else if (s.set === 1) {
            plain.inc(value);
            hot.inc(value);
          } else if (s.set === 2) {
            plain.dec(value);
            hot.dec(value);
          } else {
            plain.set(value);
            hot.set(value);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the caller’s own collect, after the fold', async () => {
    const registry = new Registry();
    const seen: number[] = [];
    const hot = new HotHistogram({
      name: 'y_seconds',
      help: 'y',
      buckets: BUCKETS,
      registers: [registry],
      collect() {
        seen.push(1);
      },
    });
    hot.hot().observe(0.002);
    const text = await registry.metrics();
    expect(seen).toHaveLength(1);
    expect(text).toContain('y_seconds_bucket{le="0.005"} 1');
    expect(text).toContain('y_seconds_count 1');
  });

  it('refuses an undeclared label when the child is made, not at a scrape', () => {
    const histogram = new HotHistogram({ name: 'z_seconds', help: 'z', labelNames: ['outcome'], registers: [] });
    const counter = new HotCounter({ name: 'z_total', help: 'z', labelNames: ['outcome'], registers: [] });
    expect(() => histogram.hot({ outcome: 'a', nope: 'b' } as never)).toThrow(/nope/);
    expect(() => counter.hot({ outcome: 'a', nope: 'b' } as never)).toThrow(/nope/);
    // Also after a child for the declared labels alone exists: the extra name must not reach it unchecked.
    histogram.hot({ outcome: 'a' });
    counter.hot({ outcome: 'a' });
    expect(() => histogram.hot({ outcome: 'a', nope: 'b' } as never)).toThrow(/nope/);
    expect(() => counter.hot({ outcome: 'a', nope: 'b' } as never)).toThrow(/nope/);
  });

  it('drops a value that is not a finite number instead of throwing on the request path', async () => {
    const registry = new Registry();
    const hot = new HotHistogram({ name: 'w_seconds', help: 'w', buckets: BUCKETS, registers: [registry] });
    hot.hot().observe(Number.NaN);
    hot.hot().observe(Number.POSITIVE_INFINITY);
    hot.hot().observe(0.5);
    expect(await registry.metrics()).toContain('w_seconds_count 1');
  });
});
