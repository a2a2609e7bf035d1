import type { FC } from 'hono/jsx';
import type { MinuteCount } from '../../inbox/count-queries.js';
import { count, when } from '../text.js';

/** One window of a chart: buckets from `from` to `to`, each `bucketSeconds` wide. */
export interface ChartWindow {
  title: string;
  from: Date;
  bucketSeconds: number;
  buckets: number;
  counts: MinuteCount[];
}

const WIDTH = 480;
const HEIGHT = 96;
const KINDS = ['received', 'finished'] as const;

/**
 * Events received and finished per bucket as two series of bars, server-rendered inline SVG (no script,
 * nothing for the Content-Security-Policy to allow): each bar has a title with its figure, and the
 * chart a text summary for screen readers.
 */
export const BarChart: FC<{ w: ChartWindow }> = ({ w }) => {
  const series = KINDS.map((kind) => {
    const values = new Array<number>(w.buckets).fill(0);
    for (const c of w.counts) {
      if (c.kind !== kind) continue;
      const i = Math.floor((c.bucket.getTime() - w.from.getTime()) / (w.bucketSeconds * 1000));
      if (i >= 0 && i < w.buckets) values[i]! += c.n;
    }
    return { kind, values, total: values.reduce((a, b) => a + b, 0) };
  });
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const slot = WIDTH / w.buckets;
  const bar = Math.max(1, slot / 2 - 0.5);
  const summary = `${w.title}: ${count(series[0]!.total)} received, ${count(series[1]!.total)} finished, at most ${count(max)} in one ${w.bucketSeconds / 60}-minute bucket`;
  return (
    <figure class="chart">
      <figcaption>
        {w.title}: <span class="key key-received">{count(series[0]!.total)} received</span>,{' '}
        <span class="key key-finished">{count(series[1]!.total)} finished</span>
      </figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT + 14}`} width={WIDTH} height={HEIGHT + 14} role="img" aria-label={summary}>
        <title>{summary}</title>
        <line class="axis" x1={0} y1={HEIGHT + 0.5} x2={WIDTH} y2={HEIGHT + 0.5} />
        {series.map((s, k) =>
          s.values.map((v, i) => {
            if (v === 0) return null;
            const h = Math.max(1, Math.round((v / max) * (HEIGHT - 4)));
            const start = new Date(w.from.getTime() + i * w.bucketSeconds * 1000);
            return (
              <rect class={`bar bar-${s.kind}`} x={(i * slot + k * bar).toFixed(1)} y={HEIGHT - h} width={bar.toFixed(1)} height={h}>
                <title>{`${when(start).slice(0, 16)} ${s.kind} ${count(v)}`}</title>
              </rect>
            );
          }),
        )}
        <text class="tick" x={0} y={HEIGHT + 12}>
          {/* A day's window starts and ends at the same time of day: its start says which day. */}
          {w.bucketSeconds * w.buckets > 3 * 3600 ? when(w.from).slice(5, 16) : when(w.from).slice(11, 16)}
        </text>
        <text class="tick" x={WIDTH} y={HEIGHT + 12} text-anchor="end">
          {when(new Date(w.from.getTime() + w.buckets * w.bucketSeconds * 1000)).slice(11, 16)} UTC
        </text>
      </svg>
    </figure>
  );
};
