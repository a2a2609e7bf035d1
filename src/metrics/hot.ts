import { Counter, Gauge, Histogram, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration } from 'prom-client';

/** A label set, as prom-client takes one. */
export type MetricLabels<T extends string> = Partial<Record<T, string | number>>;

/**
 * Counters and histograms for paths that run once per event.
 *
 * prom-client validates and hashes the label object on every inc() and observe(), its labels()
 * children included (they only bind the object). At five such calls per webhook that costs more
 * than verifying the signature (about 15 µs of a request's ~110 µs of process CPU in the profiles
 * `CPU_PROF_DIR=<dir> npx tsx bench/cpu.ts` writes). A hot child counts into plain numbers; the metric folds them in
 * whenever it is read (every scrape, every get()), so what a scrape shows is exact as of that
 * scrape. Everything else (inc, observe, labels, reset, the registry) is prom-client's own.
 */

/**
 * The key of a label set: every name and value it holds, as given. A label set with a name the metric
 * does not declare gets a key of its own, and so is checked by prom-client when its child is made.
 */
function keyOf(labels: Record<string, string | number | undefined>): string {
  let key = '';
  for (const name in labels) key += `${name}\u0001${String(labels[name])}\u0000`;
  return key;
}

/** prom-client calls collect() on the metric before every read: the fold goes first, then the caller's own. */
function foldOnCollect<M extends { collect?: unknown }>(config: M, fold: (metric: unknown) => void): M {
  const own = config.collect as ((this: unknown) => unknown) | undefined;
  return {
    ...config,
    collect(this: unknown) {
      fold(this);
      return own?.call(this);
    },
  };
}

/** Counts one; the count reaches the series at the metric's next read. */
export interface HotCounterChild {
  inc(): void;
}

/** A prom-client Counter whose hot() children count without hashing labels (see above). */
export class HotCounter<T extends string = string> extends Counter<T> {
  private readonly children = new Map<string, { labels: MetricLabels<T>; n: number }>();

  constructor(config: CounterConfiguration<T>) {
    super(foldOnCollect(config, (metric) => (metric as HotCounter<T>).fold()));
  }

  /** The child for a label set, made once (its labels checked then) and kept. */
  hot(labels: MetricLabels<T>): HotCounterChild {
    const key = keyOf(labels);
    let slot = this.children.get(key);
    if (!slot) {
      // prom-client checks the label names here, once, rather than at a scrape.
      this.inc({ ...labels }, 0);
      this.children.set(key, (slot = { labels: { ...labels }, n: 0 }));
    }
    const s = slot;
    return {
      inc() {
        s.n += 1;
      },
    };
  }

  override reset(): void {
    super.reset();
    // Called by prom-client's constructor too, before the map exists.
    for (const slot of this.children?.values() ?? []) slot.n = 0;
  }

  private fold(): void {
    for (const slot of this.children.values()) {
      if (slot.n === 0) continue;
      this.inc(slot.labels, slot.n);
      slot.n = 0;
    }
  }
}

/** Sets the value; the last one set reaches the series at the metric's next read. */
export interface HotGaugeChild {
  set(value: number): void;
}

/**
 * An unlabelled prom-client Gauge whose hot() child sets a plain number: prom-client's own set()
 * validates and hashes an (empty) label set on every call, once per request on the ingest path.
 * A direct set(), inc() or dec() applies the pending value first, so the last call wins as before.
 */
export class HotGauge<T extends string = string> extends Gauge<T> {
  private pending: number | undefined;

  constructor(config: GaugeConfiguration<T>) {
    super(foldOnCollect(config, (metric) => (metric as HotGauge<T>).fold()));
  }

  hot(): HotGaugeChild {
    return {
      set: (value) => {
        this.pending = value;
      },
    };
  }

  override set(value: number): void;
  override set(labels: MetricLabels<T>, value: number): void;
  override set(...args: unknown[]): void {
    this.fold();
    (super.set as (...a: unknown[]) => void).apply(this, args);
  }

  override inc(value?: number): void;
  override inc(labels: MetricLabels<T>, value?: number): void;
  override inc(...args: unknown[]): void {
    this.fold();
    (super.inc as (...a: unknown[]) => void).apply(this, args);
  }

  override dec(value?: number): void;
  override dec(labels: MetricLabels<T>, value?: number): void;
  override dec(...args: unknown[]): void {
    this.fold();
    (super.dec as (...a: unknown[]) => void).apply(this, args);
  }

  override reset(): void {
    super.reset();
    this.pending = undefined;
  }

  private fold(): void {
    const value = this.pending;
    if (value === undefined) return;
    this.pending = undefined;
    super.set(value);
  }
}

/** Observes one value; it reaches the series at the metric's next read. */
export interface HotHistogramChild {
  observe(value: number): void;
}

/** prom-client 15's per-series state, which its own observe() updates; the fold adds to it the same way. */
interface SeriesState {
  labels: Record<string, string | number>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

interface HistogramInternals {
  upperBounds: readonly number[];
  hashMap: Record<string, SeriesState>;
}

function sameLabels(a: Record<string, string | number>, b: Record<string, string | number | undefined>): boolean {
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  for (const k of ak) if (String(a[k]) !== String(b[k])) return false;
  return true;
}

/** A prom-client Histogram whose hot() children observe without hashing labels (see above). */
export class HotHistogram<T extends string = string> extends Histogram<T> {
  private readonly children = new Map<string, { labels: MetricLabels<T>; counts: Float64Array; sum: number; count: number }>();

  constructor(config: HistogramConfiguration<T>) {
    super(foldOnCollect(config, (metric) => (metric as HotHistogram<T>).fold()));
  }

  /** The child for a label set (none for an unlabelled histogram), made once and kept. */
  hot(labels: MetricLabels<T> = {}): HotHistogramChild {
    const internals = this as unknown as HistogramInternals;
    const key = keyOf(labels);
    let slot = this.children.get(key);
    if (!slot) {
      // labels() checks the names now; an unknown one throws here, not at a scrape.
      if (Object.keys(labels).length > 0) this.labels(labels);
      this.children.set(key, (slot = { labels: { ...labels }, counts: new Float64Array(internals.upperBounds.length), sum: 0, count: 0 }));
    }
    const s = slot;
    const bounds = internals.upperBounds;
    return {
      observe(value) {
        // prom-client throws on these; a timing that is not a number is not worth an exception per request.
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        // Above the last bound: counted in +Inf (the count) only, as prom-client does.
        if (i < bounds.length) s.counts[i]! += 1;
        s.sum += value;
        s.count += 1;
      },
    };
  }

  override reset(): void {
    super.reset();
    for (const slot of this.children?.values() ?? []) {
      slot.counts.fill(0);
      slot.sum = 0;
      slot.count = 0;
    }
  }

  private fold(): void {
    const internals = this as unknown as HistogramInternals;
    for (const slot of this.children.values()) {
      if (slot.count === 0) continue;
      let series = Object.values(internals.hashMap).find((s) => sameLabels(s.labels, slot.labels));
      if (!series) {
        this.zero(slot.labels);
        series = Object.values(internals.hashMap).find((s) => sameLabels(s.labels, slot.labels))!;
      }
      internals.upperBounds.forEach((bound, i) => {
        series.bucketValues[bound] = (series.bucketValues[bound] ?? 0) + slot.counts[i]!;
      });
      series.sum += slot.sum;
      series.count += slot.count;
      slot.counts.fill(0);
      slot.sum = 0;
      slot.count = 0;
    }
  }
}
